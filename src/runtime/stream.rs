//! Little-endian binary streams in dmlc's layout (u64 lengths, no padding), bounds-checked.
//!
//! Nothing read from a stream is trusted: every length and count is checked against the bytes
//! that remain before anything is allocated, so hostile input is an error, never a crash or a
//! huge allocation.

use super::error::{Error, Result};

/// A cursor over untrusted bytes. `what` names the format in error messages.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], what: &'static str) -> Self {
        Reader { data, pos: 0, what }
    }
    pub fn position(&self) -> usize {
        self.pos
    }
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
    pub fn is_at_end(&self) -> bool {
        self.remaining() == 0
    }

    /// An error naming the format, the offset and `msg`.
    pub fn error(&self, msg: impl std::fmt::Display) -> Error {
        Error::value(format!("{} at byte {}: {msg}", self.what, self.pos))
    }

    /// An error naming the format, the offset `at` (where the offending field starts) and `msg`.
    pub fn error_at(&self, at: usize, msg: impl std::fmt::Display) -> Error {
        Error::value(format!("{} at byte {at}: {msg}", self.what))
    }

    /// The next `n` bytes; `field` names what was being read when the data ends early.
    pub fn bytes(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "truncated while reading {field}: need {n} bytes, {} remain",
                self.remaining()
            )));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N]> {
        Ok(self.bytes(N, field)?.try_into().expect("length checked"))
    }
    pub fn u8(&mut self, field: &str) -> Result<u8> {
        Ok(self.array::<1>(field)?[0])
    }
    pub fn u16(&mut self, field: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    pub fn i32(&mut self, field: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array(field)?))
    }
    pub fn u64(&mut self, field: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }
    pub fn i64(&mut self, field: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array(field)?))
    }

    /// A count of items each at least `min_item_bytes` long, checked against what remains.
    pub fn count(&mut self, field: &str, min_item_bytes: usize) -> Result<usize> {
        let start = self.pos;
        let n = self.u64(field)?;
        let max = (self.remaining() / min_item_bytes.max(1)) as u64;
        if n > max {
            self.pos = start;
            return Err(self.error(format!(
                "{field} is {n}, but only {} bytes remain (at most {max} items)",
                self.remaining() - 8.min(self.remaining())
            )));
        }
        Ok(n as usize)
    }

    /// A dmlc string: u64 length then bytes (UTF-8 required).
    pub fn string(&mut self, field: &str) -> Result<String> {
        let n = self.count(field, 1)?;
        let b = self.bytes(n, field)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.error(format!("{field} is not valid UTF-8")))
    }

    /// A dmlc vector of strings.
    pub fn strings(&mut self, field: &str) -> Result<Vec<String>> {
        let n = self.count(field, 8)?;
        (0..n).map(|i| self.string(&format!("{field}[{i}]"))).collect()
    }

    /// A dmlc vector of u64.
    pub fn u64s(&mut self, field: &str) -> Result<Vec<u64>> {
        let n = self.count(field, 8)?;
        (0..n).map(|_| self.u64(field)).collect()
    }
}

/// Appends values in the same layout.
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Writer::default()
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn i32(&mut self, v: i32) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn string(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
    pub fn strings<S: AsRef<str>>(&mut self, v: &[S]) {
        self.u64(v.len() as u64);
        for s in v {
            self.string(s.as_ref());
        }
    }
    pub fn u64s(&mut self, v: &[u64]) {
        self.u64(v.len() as u64);
        for &x in v {
            self.u64(x);
        }
    }
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bounds() {
        let mut w = Writer::new();
        w.string("abc");
        w.strings(&["x", "yz"]);
        w.u64s(&[1, 2, 3]);
        w.i32(-5);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes, "test");
        assert_eq!(r.string("s").unwrap(), "abc");
        assert_eq!(r.strings("v").unwrap(), vec!["x", "yz"]);
        assert_eq!(r.u64s("u").unwrap(), vec![1, 2, 3]);
        assert_eq!(r.i32("i").unwrap(), -5);
        assert!(r.is_at_end());
        // Every truncation is an error, never a panic.
        for cut in 0..bytes.len() {
            let mut r = Reader::new(&bytes[..cut], "test");
            let res = (|| -> Result<()> {
                r.string("s")?;
                r.strings("v")?;
                r.u64s("u")?;
                r.i32("i")?;
                Ok(())
            })();
            assert!(res.unwrap_err().message().contains("test at byte"));
        }
        // A huge count is rejected before allocating.
        let mut w = Writer::new();
        w.u64(u64::MAX);
        let err = Reader::new(&w.buf, "blob").strings("names").unwrap_err();
        assert!(err.message().contains("names is 18446744073709551615"), "{err}");
    }
}
