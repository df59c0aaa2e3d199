//! Little-endian byte readers and writers in dmlc's layout (u64 lengths, no padding), bounds-checked.
//!
//! Nothing read from a stream is trusted: every length and count is checked against the bytes
//! that remain before anything is allocated, so hostile input is an error, never a crash or a
//! huge allocation.

use crate::runtime::base::error::{Error, Result};

/// A source of untrusted bytes read front to back. Every read is bounded by what remains,
/// so lengths and counts read from the input cannot cause huge allocations.
pub trait Input {
    /// Names the format in error messages.
    fn what(&self) -> &'static str;
    /// Bytes consumed so far.
    fn position(&self) -> usize;
    /// Bytes left.
    fn remaining(&self) -> usize;
    /// Fill `buf` with the next bytes; `field` names what was being read if the input ends.
    fn fill(&mut self, buf: &mut [u8], field: &str) -> Result<()>;

    /// An error naming the format, the current offset and `msg`.
    fn error(&self, msg: impl std::fmt::Display) -> Error
    where
        Self: Sized,
    {
        self.error_at(self.position(), msg)
    }
    /// An error naming the format, the offset `at` (where the offending field starts) and `msg`.
    fn error_at(&self, at: usize, msg: impl std::fmt::Display) -> Error
    where
        Self: Sized,
    {
        Error::value(format!("{} at byte {at}: {msg}", self.what()))
    }
    /// The error for a read of `n` bytes when fewer remain.
    fn truncated(&self, n: usize, field: &str) -> Error
    where
        Self: Sized,
    {
        self.error(format!("truncated while reading {field}: need {n} bytes, {} remain", self.remaining()))
    }

    fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N]>
    where
        Self: Sized,
    {
        let mut b = [0u8; N];
        self.fill(&mut b, field)?;
        Ok(b)
    }
    fn u8(&mut self, field: &str) -> Result<u8>
    where
        Self: Sized,
    {
        Ok(self.array::<1>(field)?[0])
    }
    fn u16(&mut self, field: &str) -> Result<u16>
    where
        Self: Sized,
    {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    fn i32(&mut self, field: &str) -> Result<i32>
    where
        Self: Sized,
    {
        Ok(i32::from_le_bytes(self.array(field)?))
    }
    fn u64(&mut self, field: &str) -> Result<u64>
    where
        Self: Sized,
    {
        Ok(u64::from_le_bytes(self.array(field)?))
    }
    fn i64(&mut self, field: &str) -> Result<i64>
    where
        Self: Sized,
    {
        Ok(i64::from_le_bytes(self.array(field)?))
    }

    /// A count of items each at least `min_item_bytes` long, checked against what remains.
    fn count(&mut self, field: &str, min_item_bytes: usize) -> Result<usize>
    where
        Self: Sized,
    {
        let at = self.position();
        let n = self.u64(field)?;
        let max = (self.remaining() / min_item_bytes.max(1)) as u64;
        if n > max {
            return Err(self.error_at(
                at,
                format!("{field} is {n}, but only {} bytes remain (at most {max} items)", self.remaining()),
            ));
        }
        Ok(n as usize)
    }

    /// A dmlc string: u64 length then bytes (UTF-8 required).
    fn string(&mut self, field: &str) -> Result<String>
    where
        Self: Sized,
    {
        let n = self.count(field, 1)?;
        let mut b = vec![0u8; n];
        self.fill(&mut b, field)?;
        String::from_utf8(b).map_err(|_| self.error(format!("{field} is not valid UTF-8")))
    }

    /// A dmlc vector of strings.
    fn strings(&mut self, field: &str) -> Result<Vec<String>>
    where
        Self: Sized,
    {
        let n = self.count(field, 8)?;
        (0..n).map(|i| self.string(&format!("{field}[{i}]"))).collect()
    }

    /// A dmlc vector of u64.
    fn u64s(&mut self, field: &str) -> Result<Vec<u64>>
    where
        Self: Sized,
    {
        let n = self.count(field, 8)?;
        (0..n).map(|_| self.u64(field)).collect()
    }
}

/// A cursor over untrusted bytes in memory. `what` names the format in error messages.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], what: &'static str) -> Self {
        Reader { data, pos: 0, what }
    }
    pub fn is_at_end(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes, borrowed; `field` names what was being read if the data ends early.
    pub fn bytes(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.truncated(n, field));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
}

impl Input for Reader<'_> {
    fn what(&self) -> &'static str {
        self.what
    }
    fn position(&self) -> usize {
        self.pos
    }
    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
    fn fill(&mut self, buf: &mut [u8], field: &str) -> Result<()> {
        let b = self.bytes(buf.len(), field)?;
        buf.copy_from_slice(b);
        Ok(())
    }
}

/// Untrusted bytes read from a file, without loading it whole: large fields (tensor data) are
/// read straight into their destination.
pub struct FileInput {
    file: std::io::BufReader<std::fs::File>,
    pos: usize,
    len: usize,
    what: &'static str,
}

impl FileInput {
    pub fn open(path: &std::path::Path, what: &'static str) -> Result<FileInput> {
        let file =
            std::fs::File::open(path).map_err(|e| Error::io(format!("cannot open `{}`: {e}", path.display())))?;
        let len = file.metadata().map_err(|e| Error::io(format!("cannot stat `{}`: {e}", path.display())))?.len();
        let len = usize::try_from(len).map_err(|_| Error::io(format!("`{}` is too large", path.display())))?;
        Ok(FileInput { file: std::io::BufReader::with_capacity(1 << 16, file), pos: 0, len, what })
    }
}

impl Input for FileInput {
    fn what(&self) -> &'static str {
        self.what
    }
    fn position(&self) -> usize {
        self.pos
    }
    fn remaining(&self) -> usize {
        self.len - self.pos
    }
    fn fill(&mut self, buf: &mut [u8], field: &str) -> Result<()> {
        if buf.len() > self.remaining() {
            return Err(self.truncated(buf.len(), field));
        }
        std::io::Read::read_exact(&mut self.file, buf).map_err(|e| self.error(format!("cannot read {field}: {e}")))?;
        self.pos += buf.len();
        Ok(())
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
        use super::Input;
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
