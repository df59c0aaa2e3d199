//! What MetaSchedule's `RPCRunner` needs beyond loading shared libraries: its builder uploads a
//! `.tar` of object files (or one `.o`), which the server links into a shared library with the
//! system compiler before loading it, as TVM's servers do; and it fills its measurement inputs
//! with `tvm.contrib.random.random_fill_for_measure`.
//!
//! The archive is read here, not by a `tar` program: only regular files with plain relative
//! names are written (inside a directory beside the archive, in the session's work directory);
//! links, devices and names leaving the directory are refused.

use crate::abi::{dtype_code, DLDataType};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, Value};
use crate::runtime::tensor::ndarray::copy_from_bytes;
use std::path::{Path, PathBuf};

const BLOCK: usize = 512;

/// Where a name inside a directory may be written (the session's rule: `env::confined`).
pub type Confine = fn(&Path, &str) -> Result<PathBuf>;

/// The shared library to load for `path`: itself, or for a `.tar` or `.o` the library linked from
/// its object files (`path` + `.so`).
pub fn loadable(path: &Path, confine: Confine) -> Result<PathBuf> {
    let objects = match path.extension().and_then(|e| e.to_str()) {
        Some("tar") => untar(path, confine)?,
        Some("o") => vec![path.to_path_buf()],
        _ => return Ok(path.to_path_buf()),
    };
    let mut out = path.as_os_str().to_owned();
    out.push(".so");
    let out = PathBuf::from(out);
    link(&objects, &out)?;
    Ok(out)
}

/// The regular files of the tar archive at `path`, written to a directory beside it (`x.tar`:
/// `x/`); their paths.
fn untar(path: &Path, confine: Confine) -> Result<Vec<PathBuf>> {
    let data = std::fs::read(path).map_err(|e| Error::io(format!("{}: {e}", path.display())))?;
    let data = if data.starts_with(&[0x1f, 0x8b]) { gunzip(path)? } else { data };
    let dir = path.with_extension("");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("{}: {e}", dir.display())))?;
    let what = |m: String| Error::value(format!("{}: {m}", path.display()));
    let (mut pos, mut files) = (0, Vec::new());
    while pos + BLOCK <= data.len() && data[pos..pos + BLOCK].iter().any(|&b| b != 0) {
        let header = &data[pos..pos + BLOCK];
        let size = octal(&header[124..136]).ok_or_else(|| what("an entry size that is not octal".into()))?;
        let start = pos + BLOCK;
        let end = start.checked_add(size).filter(|&e| e <= data.len());
        let end = end.ok_or_else(|| what(format!("an entry of {size} bytes runs past the archive's end")))?;
        match header[156] {
            b'0' | 0 => {
                let name = entry_name(header).ok_or_else(|| what("an entry name that is not UTF-8".into()))?;
                let file = confine(&dir, &name)?;
                std::fs::write(&file, &data[start..end]).map_err(|e| Error::io(format!("{}: {e}", file.display())))?;
                files.push(file);
            }
            // Directories and pax metadata carry no file.
            b'5' | b'x' | b'g' => {}
            kind => return Err(what(format!("entry kind {:?} (only regular files are unpacked)", kind as char))),
        }
        pos = start + size.div_ceil(BLOCK) * BLOCK;
    }
    if files.is_empty() {
        return Err(what("no object files in the archive".into()));
    }
    Ok(files)
}

/// Most bytes a compressed archive may unpack to.
const UNPACKED_LIMIT: u64 = 1 << 30;

/// The gzip-compressed file at `path` (TVM writes its archives with `tar -czf`), unpacked by the
/// system's `gzip`, at most [`UNPACKED_LIMIT`] bytes.
fn gunzip(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let io = |e: std::io::Error| Error::io(format!("unpacking {} with `gzip -dc`: {e}", path.display()));
    let mut child =
        Command::new("gzip").arg("-dc").arg(path).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().map_err(io)?;
    let mut out = Vec::new();
    let read = child.stdout.take().map(|o| o.take(UNPACKED_LIMIT + 1).read_to_end(&mut out));
    if out.len() as u64 > UNPACKED_LIMIT {
        let _ = child.kill();
    }
    let status = child.wait().map_err(io)?;
    match read {
        Some(Ok(_)) if out.len() as u64 > UNPACKED_LIMIT => {
            Err(Error::value(format!("{}: unpacks to more than {UNPACKED_LIMIT} bytes", path.display())))
        }
        Some(Ok(_)) if status.success() => Ok(out),
        Some(Err(e)) => Err(io(e)),
        _ => Err(Error::value(format!("{}: not a gzip archive gzip can unpack ({status})", path.display()))),
    }
}

/// A header's name: the ustar prefix, if any, then the name field.
fn entry_name(header: &[u8]) -> Option<String> {
    let name = field(&header[..100])?;
    match (&header[257..262] == b"ustar", field(&header[345..500])?) {
        (true, prefix) if !prefix.is_empty() => Some(format!("{prefix}/{name}")),
        _ => Some(name.to_string()),
    }
}

/// A NUL-terminated (or full) text field.
fn field(b: &[u8]) -> Option<&str> {
    std::str::from_utf8(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]).ok()
}

fn octal(field: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(field).ok()?.trim_matches(|c: char| c == '\0' || c == ' ');
    usize::from_str_radix(text, 8).ok()
}

/// `$CXX` (default `cc`) `-shared -o out objects...`.
fn link(objects: &[PathBuf], out: &Path) -> Result<()> {
    let compiler = std::env::var_os("CXX").unwrap_or_else(|| "cc".into());
    let run = std::process::Command::new(&compiler).arg("-shared").arg("-o").arg(out).args(objects).output();
    let shown = compiler.to_string_lossy();
    let done = run.map_err(|e| Error::io(format!("linking {}: cannot run `{shown}`: {e}", out.display())))?;
    if !done.status.success() {
        return Err(Error::value(format!(
            "linking {} with `{shown}` failed: {}",
            out.display(),
            String::from_utf8_lossy(&done.stderr).trim()
        )));
    }
    Ok(())
}

/// `tvm.contrib.random.random_fill_for_measure(tensor)`: fill a tensor with pseudo-random values
/// small enough for timing (floats in [0.5, 1), integers 0 to 15), different on each call.
pub fn random_fill_for_measure(args: Args<'_>) -> Result<Value> {
    args.expect_len(1, "tvm.contrib.random.random_fill_for_measure(tensor)")?;
    let t = args.tensor(0)?;
    let n = t.byte_size()?;
    let mut bytes = vec![0u8; n];
    let mut rng = Rng::seeded();
    fill(t.dtype(), &mut bytes, &mut rng)?;
    copy_from_bytes(t, &bytes)?;
    Ok(Value::Null)
}

fn fill(dtype: DLDataType, bytes: &mut [u8], rng: &mut Rng) -> Result<()> {
    let width = (dtype.bits as usize).div_ceil(8);
    if width == 0 {
        return Err(Error::value(format!("random fill: data type {dtype:?} has no width")));
    }
    for v in bytes.chunks_mut(width) {
        let r = rng.next();
        let value: u64 = match (dtype.code, dtype.bits) {
            (dtype_code::FLOAT, 32) => (0.5 + (r >> 40) as f32 / (1u64 << 25) as f32).to_bits() as u64,
            (dtype_code::FLOAT, 64) => (0.5 + (r >> 11) as f64 / (1u64 << 54) as f64).to_bits(),
            (dtype_code::FLOAT, 16) => 0x3800 | (r & 0x3ff),
            (dtype_code::BFLOAT, 16) => 0x3f00 | (r & 0x7f),
            (dtype_code::INT | dtype_code::UINT, _) => r & 15,
            _ => return Err(Error::unsupported(format!("random fill of data type {dtype:?}"))),
        };
        v.copy_from_slice(&value.to_le_bytes()[..v.len()]);
    }
    Ok(())
}

/// xorshift64*, seeded from the clock.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64);
        Rng(t.unwrap_or(0) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::env::confined;

    fn tar_entry(name: &str, kind: u8, data: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; BLOCK];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
        h[156] = kind;
        h.extend_from_slice(data);
        h.resize(BLOCK + data.len().div_ceil(BLOCK) * BLOCK, 0);
        h
    }

    #[test]
    fn archives_unpack_inside_their_directory_only() {
        let dir = std::env::temp_dir().join(format!("rpc-link-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tar = dir.join("m.tar");
        let good = [tar_entry("a.o", b'0', b"abc"), tar_entry("d", b'5', b""), vec![0; 2 * BLOCK]].concat();
        std::fs::write(&tar, good).unwrap();
        assert_eq!(untar(&tar, confined).unwrap(), [dir.join("m/a.o")]);
        assert_eq!(std::fs::read(dir.join("m/a.o")).unwrap(), b"abc");
        for (entry, want) in [
            (tar_entry("../x.o", b'0', b"x"), "relative path inside"),
            (tar_entry("l.o", b'2', b""), "entry kind '2'"),
            (tar_entry("a.o", b'0', b"abc")[..BLOCK + 1].to_vec(), "runs past the archive's end"),
        ] {
            std::fs::write(&tar, entry).unwrap();
            let e = untar(&tar, confined).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn measurement_values_are_small_and_finite() {
        let mut rng = Rng::seeded();
        let mut b = vec![0u8; 4 * 64];
        fill(DLDataType::FLOAT32, &mut b, &mut rng).unwrap();
        let v: Vec<f32> = b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert!(v.iter().all(|x| (0.5..1.0).contains(x)), "{v:?}");
        assert!(v.windows(2).any(|w| w[0] != w[1]), "all equal: {v:?}");
        let e = fill(DLDataType::new(dtype_code::FLOAT, 8, 1), &mut b, &mut rng).unwrap_err();
        assert!(e.to_string().contains("random fill"), "{e}");
    }
}
