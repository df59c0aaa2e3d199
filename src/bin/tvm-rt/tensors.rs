//! Arrays in and out of NumPy's `.npy` files (C order), values as f64 for comparing, and
//! filled arrays for inputs nobody gave.

use crate::fail::{Failure, FileContext};
use npyz::half::f16;
use npyz::{DType, NpyFile, Order, TypeChar, WriteOptions, WriterBuilder};
use rand::rngs::StdRng;
use rand::Rng;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use tvm_runtime::abi::{dtype_code, DLDataType, DLDevice};
use tvm_runtime::runtime::tensor::ndarray::NDArray;

/// The element types `.npy` files and the runtime share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
}

const ALL: [Elem; 12] = [
    Elem::Bool,
    Elem::I8,
    Elem::I16,
    Elem::I32,
    Elem::I64,
    Elem::U8,
    Elem::U16,
    Elem::U32,
    Elem::U64,
    Elem::F16,
    Elem::F32,
    Elem::F64,
];

pub const SUPPORTED: &str = "bool, int8..int64, uint8..uint64, float16, float32, float64";

impl Elem {
    pub fn dtype(self) -> DLDataType {
        let (code, bits) = match self {
            Elem::Bool => (dtype_code::UINT, 1),
            Elem::I8 => (dtype_code::INT, 8),
            Elem::I16 => (dtype_code::INT, 16),
            Elem::I32 => (dtype_code::INT, 32),
            Elem::I64 => (dtype_code::INT, 64),
            Elem::U8 => (dtype_code::UINT, 8),
            Elem::U16 => (dtype_code::UINT, 16),
            Elem::U32 => (dtype_code::UINT, 32),
            Elem::U64 => (dtype_code::UINT, 64),
            Elem::F16 => (dtype_code::FLOAT, 16),
            Elem::F32 => (dtype_code::FLOAT, 32),
            Elem::F64 => (dtype_code::FLOAT, 64),
        };
        DLDataType::new(code, bits, 1)
    }

    pub fn of_dtype(dtype: DLDataType) -> Option<Elem> {
        ALL.into_iter().find(|e| e.dtype() == dtype)
    }

    /// The element type of a `.npy` dtype (either byte order).
    fn of_npy(dtype: &DType) -> Option<Elem> {
        let DType::Plain(ts) = dtype else { return None };
        let size = ts.size_field();
        let bits = match ts.type_char() {
            TypeChar::Bool if size == 1 => 1,
            TypeChar::Int | TypeChar::Uint | TypeChar::Float => size * 8,
            _ => return None,
        };
        let code = match ts.type_char() {
            TypeChar::Int => dtype_code::INT,
            TypeChar::Float => dtype_code::FLOAT,
            _ => dtype_code::UINT,
        };
        u8::try_from(bits).ok().and_then(|bits| Elem::of_dtype(DLDataType::new(code, bits, 1)))
    }
}

/// One element type, as the runtime stores it (native byte order) and as `.npy` files do.
pub trait Element: Copy + npyz::Deserialize + npyz::AutoSerialize {
    const SIZE: usize;
    fn from_ne(bytes: &[u8]) -> Self;
    fn put_ne(self, out: &mut Vec<u8>);
    fn to_f64(self) -> f64;
    /// Integers in [0, 10), floats in [-1, 1), booleans either way.
    fn random(rng: &mut StdRng) -> Self;
}

macro_rules! number_elements {
    ($($t:ty: $lo:expr, $hi:expr);* $(;)?) => {$(
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_ne(bytes: &[u8]) -> Self {
                <$t>::from_ne_bytes(bytes.try_into().expect("one element's bytes"))
            }
            fn put_ne(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn random(rng: &mut StdRng) -> Self {
                rng.random_range($lo..$hi)
            }
        }
    )*};
}

number_elements! {
    i8: 0, 10; i16: 0, 10; i32: 0, 10; i64: 0, 10;
    u8: 0, 10; u16: 0, 10; u32: 0, 10; u64: 0, 10;
    f32: -1.0, 1.0; f64: -1.0, 1.0;
}

impl Element for f16 {
    const SIZE: usize = 2;
    fn from_ne(bytes: &[u8]) -> Self {
        f16::from_ne_bytes(bytes.try_into().expect("one element's bytes"))
    }
    fn put_ne(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_ne_bytes());
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn random(rng: &mut StdRng) -> Self {
        f16::from_f32(rng.random_range(-1.0..1.0))
    }
}

impl Element for bool {
    const SIZE: usize = 1;
    fn from_ne(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
    fn put_ne(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn random(rng: &mut StdRng) -> Self {
        rng.random_bool(0.5)
    }
}

/// Evaluate `$body` with `$T` standing for the Rust type of element type `$elem`.
macro_rules! with_element {
    ($elem:expr, $T:ident => $body:expr) => {
        match $elem {
            Elem::Bool => {
                type $T = bool;
                $body
            }
            Elem::I8 => {
                type $T = i8;
                $body
            }
            Elem::I16 => {
                type $T = i16;
                $body
            }
            Elem::I32 => {
                type $T = i32;
                $body
            }
            Elem::I64 => {
                type $T = i64;
                $body
            }
            Elem::U8 => {
                type $T = u8;
                $body
            }
            Elem::U16 => {
                type $T = u16;
                $body
            }
            Elem::U32 => {
                type $T = u32;
                $body
            }
            Elem::U64 => {
                type $T = u64;
                $body
            }
            Elem::F16 => {
                type $T = f16;
                $body
            }
            Elem::F32 => {
                type $T = f32;
                $body
            }
            Elem::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

fn to_bytes<T: Element>(values: Vec<T>) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * T::SIZE);
    values.into_iter().for_each(|v| v.put_ne(&mut out));
    out
}

fn elements<'a, T: Element + 'a>(bytes: &'a [u8]) -> impl Iterator<Item = T> + 'a {
    bytes.chunks_exact(T::SIZE).map(T::from_ne)
}

/// "float32 [1, 3, 224, 224]"
pub fn describe(dtype: DLDataType, shape: &[i64]) -> String {
    format!("{dtype} {shape:?}")
}

/// Read a C-order `.npy` file into a host array.
pub fn read_npy(path: &Path) -> Result<NDArray, Failure> {
    let file = File::open(path).in_file(path)?;
    let npy =
        NpyFile::new(BufReader::new(file)).map_err(|e| Failure::file(path, format!("not a valid .npy file: {e}")))?;
    if npy.order() == Order::Fortran && npy.shape().len() > 1 {
        return Err(Failure::file(path, "Fortran-order arrays are not supported: save a C-order array"));
    }
    let elem = Elem::of_npy(&npy.dtype()).ok_or_else(|| {
        Failure::file(
            path,
            format!("dtype `{}` is not supported (supported: {SUPPORTED})", npy.dtype().descr().trim_matches('\'')),
        )
    })?;
    let shape = npy.shape().iter().map(|&d| i64::try_from(d)).collect::<Result<Vec<i64>, _>>().in_file(path)?;
    let bytes = with_element!(elem, T => to_bytes(npy.into_vec::<T>().map_err(|e| {
        Failure::file(path, format!("reading the array data: {e}"))
    })?));
    NDArray::from_bytes(&shape, elem.dtype(), &bytes).in_file(path)
}

/// Write a host array as a C-order `.npy` file.
pub fn write_npy(path: &Path, array: &NDArray) -> Result<(), Failure> {
    let elem = Elem::of_dtype(array.dtype()).ok_or_else(|| {
        Failure::file(path, format!("dtype {} cannot be written as .npy (supported: {SUPPORTED})", array.dtype()))
    })?;
    let bytes = array.to_vec_u8()?;
    let shape: Vec<u64> = array.shape().iter().map(|&d| d as u64).collect();
    let file = BufWriter::new(File::create(path).in_file(path)?);
    with_element!(elem, T => write_elements::<T>(file, &shape, &bytes)).in_file(path)
}

fn write_elements<T: Element>(file: impl Write, shape: &[u64], bytes: &[u8]) -> std::io::Result<()> {
    let mut writer = WriteOptions::new().default_dtype().shape(shape).writer(file).begin_nd()?;
    writer.extend(elements::<T>(bytes))?;
    writer.finish()
}

/// Every element of a host array as f64 (None for a dtype `.npy` does not have).
pub fn values_f64(array: &NDArray) -> Result<Option<Vec<f64>>, Failure> {
    let Some(elem) = Elem::of_dtype(array.dtype()) else { return Ok(None) };
    let bytes = array.to_vec_u8()?;
    Ok(Some(with_element!(elem, T => elements::<T>(&bytes).map(T::to_f64).collect())))
}

/// `n` random elements of `dtype` as bytes (None for a dtype `.npy` does not have).
pub fn random_bytes(dtype: DLDataType, n: usize, rng: &mut StdRng) -> Option<Vec<u8>> {
    let elem = Elem::of_dtype(dtype)?;
    Some(with_element!(elem, T => to_bytes((0..n).map(|_| T::random(rng)).collect::<Vec<T>>())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tvm-rt-tensors-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn every_element_type_round_trips_through_npy() {
        let mut rng = StdRng::seed_from_u64(1);
        for elem in ALL {
            let dtype = elem.dtype();
            let bytes = random_bytes(dtype, 6, &mut rng).unwrap();
            let array = NDArray::from_bytes(&[2, 3], dtype, &bytes).unwrap();
            let path = scratch(&format!("{dtype}.npy"));
            write_npy(&path, &array).unwrap();
            let back = read_npy(&path).unwrap();
            assert_eq!((back.dtype(), back.shape()), (dtype, &[2i64, 3][..]), "{dtype}");
            assert_eq!(back.to_vec_u8().unwrap(), bytes, "{dtype}");
            assert_eq!(values_f64(&back).unwrap().unwrap().len(), 6);
        }
    }

    #[test]
    fn big_endian_files_read_as_values() {
        let path = scratch("big_endian.npy");
        let dtype: npyz::TypeStr = ">i4".parse().unwrap();
        let file = File::create(&path).unwrap();
        let mut w = WriteOptions::new().dtype(DType::Plain(dtype)).shape(&[3]).writer(file).begin_nd().unwrap();
        w.extend([1i32, -2, 70000]).unwrap();
        w.finish().unwrap();
        let a = read_npy(&path).unwrap();
        assert_eq!(a.dtype(), Elem::I32.dtype());
        assert_eq!(values_f64(&a).unwrap().unwrap(), vec![1.0, -2.0, 70000.0]);
    }

    #[test]
    fn fortran_order_and_other_dtypes_are_refused() {
        let path = scratch("fortran.npy");
        let file = File::create(&path).unwrap();
        let mut w =
            WriteOptions::new().default_dtype().shape(&[2, 2]).order(Order::Fortran).writer(file).begin_nd().unwrap();
        w.extend([1f32, 2.0, 3.0, 4.0]).unwrap();
        w.finish().unwrap();
        assert!(read_npy(&path).unwrap_err().message.contains("Fortran-order"));
        let path = scratch("complex.npy");
        let dtype: npyz::TypeStr = "<c8".parse().unwrap();
        // No elements: the header is the whole file.
        WriteOptions::new_header_only()
            .dtype(DType::Plain(dtype))
            .shape(&[0])
            .writer(File::create(&path).unwrap())
            .write_header_only()
            .unwrap();
        let e = read_npy(&path).unwrap_err();
        assert!(e.message.contains("dtype `<c8` is not supported"), "{}", e.message);
        assert_eq!(e.code, crate::fail::USAGE);
    }
}

/// The array on `device`: itself when it is there, else a copy.
pub fn copy_to(a: NDArray, device: DLDevice) -> Result<NDArray, Failure> {
    if a.device() == device {
        return Ok(a);
    }
    Ok(a.copy_to(device)?)
}
