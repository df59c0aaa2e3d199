//! Element types: TVM's type-string grammar, validation and byte sizes.

use crate::abi::{dtype_code, DLDataType};
use crate::runtime::base::error::{Error, Result};

impl DLDataType {
    pub const fn new(code: u8, bits: u8, lanes: u16) -> Self {
        DLDataType { code, bits, lanes }
    }
    pub const FLOAT32: DLDataType = DLDataType::new(dtype_code::FLOAT, 32, 1);
    pub const INT32: DLDataType = DLDataType::new(dtype_code::INT, 32, 1);
    pub const INT64: DLDataType = DLDataType::new(dtype_code::INT, 64, 1);

    /// Bytes per element as TVM stores it: `(bits * lanes + 7) / 8`.
    pub fn element_bytes(&self) -> usize {
        (self.bits as usize * self.lanes as usize).div_ceil(8)
    }

    /// Check what `TVMArrayAlloc` accepts: lanes ≥ 1, bits a power of two, whole bytes except
    /// 1- and 4-bit integers.
    pub fn validate_for_alloc(&self) -> Result<()> {
        if self.lanes < 1 {
            return Err(Error::value(format!("invalid dtype {self}: lanes must be at least 1")));
        }
        if self.bits == 0 || !self.bits.is_power_of_two() {
            return Err(Error::value(format!("invalid dtype {self}: bits must be a power of two")));
        }
        let sub_byte_ok = matches!(self.code, dtype_code::INT | dtype_code::UINT) && matches!(self.bits, 1 | 4);
        if self.bits % 8 != 0 && !sub_byte_ok {
            return Err(Error::value(format!("invalid dtype {self}: bits must be a multiple of 8")));
        }
        Ok(())
    }

    /// Parse TVM's type strings: `float32`, `int8x4`, `uint1`, `bool`, `handle`, `bfloat16`, ...
    pub fn parse(s: &str) -> Result<DLDataType> {
        let bad = || Error::value(format!("unknown dtype `{s}`"));
        match s {
            "bool" => return Ok(DLDataType::new(dtype_code::UINT, 1, 1)),
            "" | "void" => return Ok(DLDataType::new(dtype_code::OPAQUE_HANDLE, 0, 0)),
            _ => {}
        }
        let prefixes: [(&str, u8, u8); 7] = [
            ("e4m3_float", dtype_code::E4M3_FLOAT, 8),
            ("e5m2_float", dtype_code::E5M2_FLOAT, 8),
            ("bfloat", dtype_code::BFLOAT, 16),
            ("handle", dtype_code::OPAQUE_HANDLE, 64),
            ("float", dtype_code::FLOAT, 32),
            ("uint", dtype_code::UINT, 32),
            ("int", dtype_code::INT, 32),
        ];
        let (rest, code, default_bits) =
            prefixes.iter().find_map(|&(p, c, b)| s.strip_prefix(p).map(|r| (r, c, b))).ok_or_else(bad)?;
        let (bits_str, lanes_str) = match rest.split_once('x') {
            Some((b, l)) => (b, Some(l)),
            None => (rest, None),
        };
        let bits = if bits_str.is_empty() {
            default_bits
        } else {
            let b: u32 = bits_str.parse().map_err(|_| bad())?;
            u8::try_from(b).map_err(|_| bad())?
        };
        let lanes = match lanes_str {
            None => 1,
            Some(l) => {
                let n: u32 = l.parse().map_err(|_| bad())?;
                if n == 0 {
                    return Err(bad());
                }
                u16::try_from(n).map_err(|_| bad())?
            }
        };
        if bits == 0 {
            return Err(bad());
        }
        Ok(DLDataType::new(code, bits, lanes))
    }
}

impl std::fmt::Display for DLDataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.code == dtype_code::UINT && self.bits == 1 && self.lanes == 1 {
            return f.write_str("bool");
        }
        if self.code == dtype_code::OPAQUE_HANDLE && self.bits == 0 && self.lanes == 0 {
            return f.write_str("void");
        }
        if self.code == dtype_code::OPAQUE_HANDLE {
            return f.write_str("handle");
        }
        let name = match self.code {
            dtype_code::INT => "int",
            dtype_code::UINT => "uint",
            dtype_code::FLOAT => "float",
            dtype_code::BFLOAT => "bfloat",
            dtype_code::E4M3_FLOAT => "e4m3_float",
            dtype_code::E5M2_FLOAT => "e5m2_float",
            c => return write!(f, "dtype(code={c}, bits={}, lanes={})", self.bits, self.lanes),
        };
        write!(f, "{name}{}", self.bits)?;
        if self.lanes > 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

/// Number of elements of a shape, or an error on a negative dim or overflow.
pub fn num_elements(shape: &[i64]) -> Result<usize> {
    let mut n = 1usize;
    for &d in shape {
        match usize::try_from(d).ok().and_then(|d| n.checked_mul(d)) {
            Some(m) => n = m,
            None => return Err(shape_error(shape)),
        }
    }
    Ok(n)
}

/// The error of a shape with a negative dimension or too many elements (out of the hot loop).
#[cold]
fn shape_error(shape: &[i64]) -> Error {
    match shape.iter().find(|&&d| d < 0) {
        Some(d) => Error::value(format!("negative dimension {d} in shape {shape:?}")),
        None => Error::value(format!("shape {shape:?} overflows")),
    }
}

/// Bytes of a compact tensor: `prod(shape) * element_bytes`, checked for overflow.
pub fn data_size(shape: &[i64], dtype: DLDataType) -> Result<usize> {
    match num_elements(shape)?.checked_mul(dtype.element_bytes()) {
        Some(n) => Ok(n),
        None => Err(size_error(shape, dtype)),
    }
}

#[cold]
fn size_error(shape: &[i64], dtype: DLDataType) -> Error {
    Error::value(format!("tensor of shape {shape:?} and dtype {dtype} overflows"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in [
            "float32",
            "float16",
            "int8",
            "uint8",
            "int64",
            "bool",
            "handle",
            "bfloat16",
            "float32x4",
            "int4",
            "uint1x8",
            "e4m3_float8",
        ] {
            let t = DLDataType::parse(s).unwrap();
            assert_eq!(t.to_string(), s, "{s}");
        }
        assert_eq!(DLDataType::parse("float").unwrap(), DLDataType::FLOAT32);
        assert_eq!(DLDataType::parse("int").unwrap(), DLDataType::new(0, 32, 1));
        for bad in ["floaty", "f32", "int8x", "int0", "int300", "float32x0", "x"] {
            assert!(DLDataType::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(data_size(&[2, 3], DLDataType::FLOAT32).unwrap(), 24);
        assert_eq!(data_size(&[4], DLDataType::new(0, 4, 1)).unwrap(), 4);
        assert_eq!(data_size(&[], DLDataType::FLOAT32).unwrap(), 4);
        assert!(data_size(&[-1], DLDataType::FLOAT32).is_err());
        assert!(data_size(&[i64::MAX, i64::MAX], DLDataType::FLOAT32).is_err());
        assert!(DLDataType::new(2, 12, 1).validate_for_alloc().is_err());
        assert!(DLDataType::new(2, 16, 0).validate_for_alloc().is_err());
        assert!(DLDataType::new(0, 4, 1).validate_for_alloc().is_ok());
        assert!(DLDataType::new(2, 4, 1).validate_for_alloc().is_err());
    }
}
