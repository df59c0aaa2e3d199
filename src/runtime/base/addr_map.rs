//! Maps and sets keyed by an object's address (or a pair of them), hashed by one multiply: the walkers (structural
//! hash and equality, deep copy, repr, serialization) and the live-object registry look up
//! every object they meet, where the standard library's SipHash is most of the cost.

/// A hasher for addresses: objects are at least 16-byte aligned, so the low four bits are
/// dropped and the rest spread by a Fibonacci multiply.
#[derive(Default)]
pub struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        // One address: its bits past the alignment, spread; a pair: the second mixed into the first.
        self.0 = (self.0.rotate_left(5) ^ (n as u64 >> 4)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The hasher of maps and sets keyed by address: `HashMap<usize, V, AddrHash>`.
pub type AddrHash = std::hash::BuildHasherDefault<AddrHasher>;
