//! Packed functions: type-erased callables over `(TVMValue, type code)` arguments, and modules:
//! named collections of packed functions with imports.
//!
//! Arguments stay in the C representation ([`Args`] borrows the caller's arrays, so calls from C
//! pass through without conversion); results are owned [`Value`]s. A value can hold a module and
//! a module hands out packed functions, so both are defined here. A module object holds a
//! [`ModuleNode`] (what kind of module it is) and its import list; the lookups that reach the
//! global registry are in `module/lookup.rs`, above the registry.
//!
//! One file of about 1 300 lines (a tenth of them tests), on purpose: `Value`, `Args`,
//! `PackedFunc` and `Module` name one another (a value holds a function or a module, a function
//! takes arguments and returns a value, a module hands out functions, arguments read values), so
//! split into files they would import in a circle, which `tests/layers.rs` forbids.

use crate::abi::{
    ffi_type_index as fti, type_code as tc, DLDataType, DLDevice, DLTensor, TVMBackendPackedCFunc, TVMByteArray,
    TVMFFIAny, TVMFFIByteArray, TVMFFISafeCallType, TVMValue,
};
use crate::runtime::base::cptr::{array_ptr_or_null, bytes_ptr};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::{ArrayObj, BytesObj, FfiArrayObj, StringObj};
use crate::runtime::dlpack::tensor_ref::{RawTensor, TensorRef};
use crate::runtime::object::{
    header::{legacy, tail_of, ObjPtr, ObjectHeader, ObjectRef, ObjectType},
    type_table::type_index,
};
use crate::runtime::tensor::ndarray::{NDArray, DLTENSOR_OFFSET};
use parking_lot::{Mutex, RwLock};
use std::any::Any;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{AtomicPtr, Ordering};

/// Borrowed arguments of one call.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    values: &'a [TVMValue],
    codes: &'a [i32],
    /// The arrays as the caller gave them, handed on to C unchanged (also for zero arguments,
    /// where the slices above are empty and their own pointers dangle).
    raw_values: *mut TVMValue,
    raw_codes: *mut i32,
}

impl<'a> Args<'a> {
    /// Arguments over parallel value and type-code arrays.
    ///
    /// # Safety
    /// Every value must be valid for its type code for `'a`: strings NUL-terminated, byte
    /// arrays, tensors (see [`TensorRef`]) and objects live and of the kind the code says. The
    /// typed accessors follow these pointers.
    pub unsafe fn new(values: &'a [TVMValue], codes: &'a [i32]) -> Self {
        assert_eq!(values.len(), codes.len(), "values and codes differ in length");
        Args { values, codes, raw_values: array_ptr_or_null(values), raw_codes: array_ptr_or_null(codes) }
    }

    /// Arguments over C arrays of `n` values and type codes.
    ///
    /// # Safety
    /// For `n > 0`, `values` and `codes` must each be NULL (reported as an error) or point to `n`
    /// initialised, aligned elements that stay valid and unmodified for `'a`; every value must
    /// then be valid for its type code for `'a`, as for [`Args::new`]. For `n == 0` the pointers
    /// are not read, only handed on as they are (to a C callback or kernel).
    pub unsafe fn from_raw(values: *const TVMValue, codes: *const i32, n: usize) -> Result<Self> {
        let (raw_values, raw_codes) = (values as *mut TVMValue, codes as *mut i32);
        if n == 0 {
            return Ok(Args { values: &[], codes: &[], raw_values, raw_codes });
        }
        if values.is_null() || codes.is_null() {
            return Err(Error::value(format!("{n} arguments but the value or type-code array is NULL")));
        }
        // SAFETY: both are non-NULL here and, by this function's contract, point to `n` elements
        // valid and unmodified for `'a`.
        let (values, codes) = unsafe { (std::slice::from_raw_parts(values, n), std::slice::from_raw_parts(codes, n)) };
        Ok(Args { values, codes, raw_values, raw_codes })
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    pub fn values(&self) -> &'a [TVMValue] {
        self.values
    }
    pub fn codes(&self) -> &'a [i32] {
        self.codes
    }
    /// The values as C receives them: the caller's array when the arguments came from C (even
    /// with none: C gets back the pointer, or NULL, it passed), else NULL when there are none,
    /// never an empty slice's dangling pointer.
    pub fn values_ptr(&self) -> *mut TVMValue {
        self.raw_values
    }
    /// The type codes as C receives them (as [`Args::values_ptr`]).
    pub fn codes_ptr(&self) -> *mut i32 {
        self.raw_codes
    }

    fn slot(&self, i: usize) -> Result<(TVMValue, i32)> {
        match (self.values.get(i), self.codes.get(i)) {
            (Some(v), Some(c)) => Ok((*v, *c)),
            _ => Err(Error::index(format!("argument {i} requested but only {} given", self.len()))),
        }
    }

    fn mismatch(i: usize, want: &str, code: i32) -> Error {
        Error::type_error(format!("argument {i}: expected {want}, got {} (type code {code})", tc::name(code)))
    }

    /// Require exactly `n` arguments.
    pub fn expect_len(&self, n: usize, what: &str) -> Result<()> {
        if self.len() != n {
            return Err(Error::value(format!("{what} expects {n} arguments, got {}", self.len())));
        }
        Ok(())
    }

    pub fn code(&self, i: usize) -> Result<i32> {
        self.slot(i).map(|(_, c)| c)
    }

    /// Integer argument (codes int, bool).
    pub fn int(&self, i: usize) -> Result<i64> {
        let (v, c) = self.slot(i)?;
        match c {
            // SAFETY: the type code says the union holds an integer.
            tc::INT | tc::BOOL => Ok(unsafe { v.v_int64 }),
            _ => Err(Self::mismatch(i, "int", c)),
        }
    }

    /// Float argument (codes float, int, bool).
    pub fn float(&self, i: usize) -> Result<f64> {
        let (v, c) = self.slot(i)?;
        // SAFETY: the type code selects the union member.
        match c {
            tc::FLOAT => Ok(unsafe { v.v_float64 }),
            tc::INT | tc::BOOL => Ok(unsafe { v.v_int64 } as f64),
            _ => Err(Self::mismatch(i, "float", c)),
        }
    }

    /// Device argument (code DLDevice only, as TVM).
    pub fn device(&self, i: usize) -> Result<DLDevice> {
        let (v, c) = self.slot(i)?;
        match c {
            // SAFETY: the type code says the union holds a device.
            tc::DEVICE => Ok(unsafe { v.v_device }),
            _ => Err(Self::mismatch(i, "DLDevice", c)),
        }
    }

    /// String argument (codes str, bytes with UTF-8 content, DLDataType, runtime.String object).
    pub fn string(&self, i: usize) -> Result<String> {
        let (v, c) = self.slot(i)?;
        match c {
            tc::STR => {
                // SAFETY: code str means `v_str` is a valid NUL-terminated string (caller contract).
                let s = unsafe { v.v_str };
                if s.is_null() {
                    return Err(Error::value(format!("argument {i}: string pointer is NULL")));
                }
                // SAFETY: as above.
                let c = unsafe { CStr::from_ptr(s) };
                c.to_str()
                    .map(str::to_string)
                    .map_err(|_| Error::value(format!("argument {i}: string is not valid UTF-8")))
            }
            tc::BYTES => String::from_utf8(self.bytes(i)?.to_vec())
                .map_err(|_| Error::value(format!("argument {i}: bytes are not UTF-8"))),
            // SAFETY: the type code says the union holds a data type.
            tc::DATA_TYPE => Ok(unsafe { v.v_type }.to_string()),
            tc::OBJECT_HANDLE => {
                let obj = self.object(i)?;
                match obj.downcast::<StringObj>() {
                    Some(s) => s.to_string().map_err(|e| Error::value(format!("argument {i}: {}", e.message()))),
                    None => Err(Self::mismatch(i, "str", c)),
                }
            }
            _ => Err(Self::mismatch(i, "str", c)),
        }
    }

    /// Whether argument `i` is a string (TVM's `String::CanConvertFrom`).
    pub fn is_string(&self, i: usize) -> bool {
        match self.slot(i) {
            Ok((_, tc::STR)) => true,
            Ok((_, tc::OBJECT_HANDLE)) => self.object(i).is_ok_and(|o| o.type_index() == type_index::STRING),
            _ => false,
        }
    }

    /// Bytes argument (code bytes, or str without its NUL).
    pub fn bytes(&self, i: usize) -> Result<&'a [u8]> {
        let (v, c) = self.slot(i)?;
        match c {
            tc::BYTES => {
                // SAFETY: code bytes means `v_handle` is a `TVMByteArray*` (caller contract).
                let arr = unsafe { v.v_handle } as *const TVMByteArray;
                if arr.is_null() {
                    return Err(Error::value(format!("argument {i}: byte array pointer is NULL")));
                }
                // SAFETY: as above.
                let arr = unsafe { &*arr };
                if arr.size == 0 {
                    return Ok(&[]);
                }
                if arr.data.is_null() {
                    return Err(Error::value(format!("argument {i}: byte array data is NULL")));
                }
                // SAFETY: the array holds `size` readable bytes (caller contract).
                Ok(unsafe { std::slice::from_raw_parts(arr.data as *const u8, arr.size) })
            }
            tc::STR => {
                // SAFETY: see `string`.
                let s = unsafe { v.v_str };
                if s.is_null() {
                    return Err(Error::value(format!("argument {i}: string pointer is NULL")));
                }
                // SAFETY: as above.
                Ok(unsafe { CStr::from_ptr(s) }.to_bytes())
            }
            _ => Err(Self::mismatch(i, "bytes", c)),
        }
    }

    /// Raw pointer argument (codes handle, NULL, DLTensor*, NDArray).
    pub fn handle(&self, i: usize) -> Result<*mut c_void> {
        let (v, c) = self.slot(i)?;
        match c {
            tc::NULLPTR => Ok(std::ptr::null_mut()),
            // SAFETY: the type code says the union holds a pointer.
            tc::OPAQUE_HANDLE | tc::DLTENSOR_HANDLE | tc::NDARRAY_HANDLE => Ok(unsafe { v.v_handle }),
            _ => Err(Self::mismatch(i, "handle", c)),
        }
    }

    /// `DLTensor*` argument (codes DLTensor*, NDArray; NULL is an error).
    pub fn dltensor(&self, i: usize) -> Result<*mut DLTensor> {
        let (v, c) = self.slot(i)?;
        match c {
            tc::DLTENSOR_HANDLE | tc::NDARRAY_HANDLE => {
                // SAFETY: the type code says the union holds a pointer.
                let p = unsafe { v.v_handle } as *mut DLTensor;
                if p.is_null() {
                    return Err(Error::value(format!("argument {i}: DLTensor pointer is NULL")));
                }
                Ok(p)
            }
            _ => Err(Self::mismatch(i, "DLTensor*", c)),
        }
    }

    /// Tensor argument (codes DLTensor*, NDArray; NULL is an error), vouched for by the
    /// arguments' contract ([`Args::new`]).
    pub fn tensor(&self, i: usize) -> Result<TensorRef<'a>> {
        let p = self.dltensor(i)?;
        // SAFETY: non-NULL, and valid for `'a` by the contract `Args` were built under.
        Ok(unsafe { TensorRef::new(&*p) })
    }

    /// Object argument (codes Object, Module, PackedFunc, NDArray, rvalue ref), new reference.
    pub fn object(&self, i: usize) -> Result<ObjectRef> {
        let (v, c) = self.slot(i)?;
        // SAFETY: the type code says the union holds an object pointer (or, for NDArray, the
        // DLTensor inside a container; for rvalue refs, a pointer to an object pointer).
        let handle = unsafe {
            match c {
                tc::OBJECT_HANDLE | tc::MODULE_HANDLE | tc::PACKED_FUNC_HANDLE => v.v_handle,
                tc::NDARRAY_HANDLE if !v.v_handle.is_null() => {
                    // (The container is checked by `header_of_handle`.)
                    let header = NDArray::header_of_handle(v.v_handle as *mut DLTensor)?;
                    // SAFETY: a live object for the duration of the call (caller contract).
                    return Ok(ObjectRef::from_borrowed(header));
                }
                tc::OBJECT_RVALUE_REF_ARG if !v.v_handle.is_null() => *(v.v_handle as *mut *mut c_void),
                _ => return Err(Self::mismatch(i, "object", c)),
            }
        };
        if handle.is_null() {
            return Err(Error::value(format!("argument {i}: object handle is NULL")));
        }
        let header = legacy::checked_header(handle, "object").map_err(|e| e.context(format!("argument {i}")))?;
        // SAFETY: live object for the duration of the call (caller contract).
        Ok(unsafe { ObjectRef::from_borrowed(header) })
    }

    pub fn typed<T: ObjectType>(&self, i: usize, want: &str) -> Result<ObjPtr<T>> {
        self.object(i)?.into_typed::<T>().map_err(|obj| {
            Error::type_error(format!("argument {i}: expected {want}, got object of type index {}", obj.type_index()))
        })
    }

    pub fn module(&self, i: usize) -> Result<Module> {
        let obj = self.object(i)?;
        Module::from_object(&obj)?.ok_or_else(|| {
            Error::type_error(format!("argument {i}: expected Module, got object of type index {}", obj.type_index()))
        })
    }
    pub fn func(&self, i: usize) -> Result<PackedFunc> {
        self.typed::<FuncObj>(i, "PackedFunc")
    }
    pub fn ndarray(&self, i: usize) -> Result<NDArray> {
        let obj = self.object(i)?;
        NDArray::from_object(&obj).ok_or_else(|| {
            Error::type_error(format!("argument {i}: expected NDArray, got object of type index {}", obj.type_index()))
        })
    }

    /// The argument as an owned [`Value`] (strings and bytes copied, objects retained).
    pub fn to_value(&self, i: usize) -> Result<Value> {
        let (v, c) = self.slot(i)?;
        // SAFETY: the type code selects the union member.
        Ok(unsafe {
            match c {
                tc::INT => Value::Int(v.v_int64),
                tc::BOOL => Value::Bool(v.v_int64 != 0),
                tc::FLOAT => Value::Float(v.v_float64),
                tc::NULLPTR => Value::Null,
                tc::OPAQUE_HANDLE => Value::Handle(v.v_handle),
                tc::DATA_TYPE => Value::DataType(v.v_type),
                tc::DEVICE => Value::Device(v.v_device),
                tc::DLTENSOR_HANDLE => Value::DLTensor(RawTensor::new(v.v_handle as *mut DLTensor)),
                tc::STR => {
                    let b = self.bytes(i)?;
                    match std::str::from_utf8(b) {
                        Ok(s) => Value::Str(s.to_string()),
                        Err(_) => Value::RawStr(CString::new(b).expect("a C string has no interior NUL")),
                    }
                }
                tc::BYTES => Value::Bytes(self.bytes(i)?.to_vec()),
                tc::OBJECT_HANDLE
                | tc::MODULE_HANDLE
                | tc::PACKED_FUNC_HANDLE
                | tc::NDARRAY_HANDLE
                | tc::OBJECT_RVALUE_REF_ARG => Value::from_object(self.object(i)?),
                _ => return Err(Error::type_error(format!("argument {i}: unsupported type code {c}"))),
            }
        })
    }
}

/// An owned value: what packed functions return.
#[derive(Clone, Debug, Default)]
pub enum Value {
    #[default]
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Handle(*mut c_void),
    DataType(DLDataType),
    Device(DLDevice),
    /// A borrowed `DLTensor*` (not owned by the value), vouched for when it was made.
    DLTensor(RawTensor),
    Str(String),
    /// A string that is not valid UTF-8, kept byte for byte.
    RawStr(CString),
    Bytes(Vec<u8>),
    NDArray(NDArray),
    Module(Module),
    Func(PackedFunc),
    Object(ObjectRef),
}

impl Value {
    /// Classify an object by its type index.
    pub fn from_object(obj: ObjectRef) -> Value {
        if let Some(a) = NDArray::from_object(&obj) {
            Value::NDArray(a)
        } else if let Ok(Some(m)) = Module::from_object(&obj) {
            Value::Module(m)
        } else if let Some(f) = obj.downcast::<FuncObj>() {
            Value::Func(f)
        } else {
            Value::Object(obj)
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Bool(_) => "bool",
            Value::Handle(_) => "handle",
            Value::DataType(_) => "DLDataType",
            Value::Device(_) => "DLDevice",
            Value::DLTensor(_) => "DLTensor*",
            Value::Str(_) | Value::RawStr(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::NDArray(_) => "NDArray",
            Value::Module(_) => "Module",
            Value::Func(_) => "PackedFunc",
            Value::Object(_) => "Object",
        }
    }

    pub fn as_int(&self) -> Result<i64> {
        match self {
            Value::Int(v) => Ok(*v),
            Value::Bool(b) => Ok(*b as i64),
            v => Err(Error::type_error(format!("expected int, got {}", v.type_name()))),
        }
    }
    pub fn into_module(self) -> Result<Module> {
        match self {
            Value::Module(m) => Ok(m),
            v => Err(Error::type_error(format!("expected Module, got {}", v.type_name()))),
        }
    }
    pub fn into_func(self) -> Result<PackedFunc> {
        match self {
            Value::Func(f) => Ok(f),
            v => Err(Error::type_error(format!("expected PackedFunc, got {}", v.type_name()))),
        }
    }
    pub fn into_ndarray(self) -> Result<NDArray> {
        match self {
            Value::NDArray(a) => Ok(a),
            v => Err(Error::type_error(format!("expected NDArray, got {}", v.type_name()))),
        }
    }
    pub fn into_string(self) -> Result<String> {
        match self {
            Value::Str(s) => Ok(s),
            Value::RawStr(c) => Ok(c.to_string_lossy().into_owned()),
            Value::Object(o) if o.downcast::<StringObj>().is_some() => {
                o.downcast::<StringObj>().expect("checked").to_string()
            }
            v => Err(Error::type_error(format!("expected str, got {}", v.type_name()))),
        }
    }

    /// Take ownership of a value in the C representation: objects are adopted (no retain).
    ///
    /// # Safety
    /// `v` must hold the union member that `code` names (integer for int/bool, and so on).
    /// For object, module and packed-function codes a non-NULL `v_handle` must be a live object
    /// carrying one reference the caller owns; for the NDArray code a non-NULL `v_handle` must
    /// be the `DLTensor` of a live NDArray container of this runtime (see
    /// [`NDArray::header_of_handle`]) carrying such a reference. That reference passes to the
    /// result, also when the object turns out to be of an unexpected type. A `DLTensor*` or
    /// opaque handle is copied as a raw pointer and not followed.
    pub unsafe fn adopt_c(v: TVMValue, code: i32) -> Result<Value> {
        Ok(match code {
            // SAFETY (union reads in this match): by this function's contract `v` holds the
            // member that `code` names, and each arm reads only that member.
            tc::INT => Value::Int(unsafe { v.v_int64 }),
            tc::BOOL => Value::Bool(unsafe { v.v_int64 } != 0),
            tc::FLOAT => Value::Float(unsafe { v.v_float64 }),
            tc::NULLPTR => Value::Null,
            tc::OPAQUE_HANDLE => Value::Handle(unsafe { v.v_handle }),
            tc::DATA_TYPE => Value::DataType(unsafe { v.v_type }),
            tc::DEVICE => Value::Device(unsafe { v.v_device }),
            // SAFETY: a returned tensor is valid for the caller by the contract above.
            tc::DLTENSOR_HANDLE => Value::DLTensor(unsafe { RawTensor::new(v.v_handle as *mut DLTensor) }),
            tc::OBJECT_HANDLE | tc::MODULE_HANDLE | tc::PACKED_FUNC_HANDLE if !unsafe { v.v_handle }.is_null() => {
                // SAFETY: a non-NULL object handle carrying an owned reference (contract above),
                // which the result adopts.
                Value::from_object(unsafe { ObjectRef::from_raw(legacy::header(v.v_handle)) })
            }
            tc::NDARRAY_HANDLE if !unsafe { v.v_handle }.is_null() => {
                // SAFETY: the handle is the `DLTensor` of a live NDArray container of this
                // runtime (contract above).
                let header = unsafe { NDArray::header_of_handle(v.v_handle as *mut DLTensor) }?;
                // SAFETY: the container carries an owned reference, which the result adopts.
                Value::from_object(unsafe { ObjectRef::from_raw(header) })
            }
            tc::OBJECT_HANDLE | tc::MODULE_HANDLE | tc::PACKED_FUNC_HANDLE | tc::NDARRAY_HANDLE => Value::Null,
            _ => return Err(Error::type_error(format!("cannot take a return value of type code {code}"))),
        })
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}
impl From<Module> for Value {
    fn from(v: Module) -> Self {
        Value::Module(v)
    }
}
impl From<NDArray> for Value {
    fn from(v: NDArray) -> Self {
        Value::NDArray(v)
    }
}
impl From<DLDevice> for Value {
    fn from(v: DLDevice) -> Self {
        Value::Device(v)
    }
}

/// Owned arguments built in Rust: keeps C strings and byte arrays alive for the call.
#[derive(Default)]
pub struct ArgBuffer {
    values: Vec<TVMValue>,
    codes: Vec<i32>,
    _strings: Vec<CString>,
    /// Boxed so their addresses stay put while the vector grows.
    #[allow(clippy::vec_box)]
    _byte_arrays: Vec<Box<TVMByteArray>>,
    _bytes: Vec<Vec<u8>>,
    _objects: Vec<ObjectRef>,
}

impl ArgBuffer {
    pub fn from_values(vals: &[Value]) -> Result<ArgBuffer> {
        let mut b = ArgBuffer::default();
        for v in vals {
            b.push(v)?;
        }
        Ok(b)
    }

    pub fn push(&mut self, v: &Value) -> Result<()> {
        let (val, code) = match v {
            Value::Null => (TVMValue::null(), tc::NULLPTR),
            Value::Int(i) => (TVMValue { v_int64: *i }, tc::INT),
            Value::Bool(b) => (TVMValue { v_int64: *b as i64 }, tc::BOOL),
            Value::Float(f) => (TVMValue { v_float64: *f }, tc::FLOAT),
            Value::Handle(h) => (TVMValue { v_handle: *h }, tc::OPAQUE_HANDLE),
            Value::DataType(t) => (TVMValue { v_type: *t }, tc::DATA_TYPE),
            Value::Device(d) => (TVMValue { v_device: *d }, tc::DEVICE),
            Value::DLTensor(t) => (TVMValue { v_handle: t.as_ptr() as *mut c_void }, tc::DLTENSOR_HANDLE),
            // Owned copies are stored first and pointers taken from where they then live.
            // A string with a NUL inside travels as a string object (a C string cannot hold it).
            Value::Str(s) if s.contains('\0') => {
                return self.push(&Value::Object(crate::runtime::container::string_object(s)))
            }
            Value::Str(s) => {
                let c = CString::new(s.as_str()).map_err(|_| Error::value("string argument contains a NUL byte"))?;
                self._strings.push(c);
                (TVMValue { v_str: self._strings.last().expect("just pushed").as_ptr() }, tc::STR)
            }
            Value::RawStr(c) => {
                self._strings.push(c.clone());
                (TVMValue { v_str: self._strings.last().expect("just pushed").as_ptr() }, tc::STR)
            }
            Value::Bytes(bytes) => {
                self._bytes.push(bytes.clone());
                let data = self._bytes.last().expect("just pushed");
                self._byte_arrays.push(Box::new(TVMByteArray { data: bytes_ptr(data), size: data.len() }));
                let arr: &TVMByteArray = self._byte_arrays.last().expect("just pushed");
                (TVMValue { v_handle: arr as *const TVMByteArray as *mut c_void }, tc::BYTES)
            }
            Value::NDArray(a) => (TVMValue { v_handle: a.as_dltensor_ptr() as *mut c_void }, tc::NDARRAY_HANDLE),
            Value::Module(m) => (TVMValue { v_handle: m.legacy_handle() }, tc::MODULE_HANDLE),
            Value::Func(f) => (TVMValue { v_handle: f.legacy_handle() }, tc::PACKED_FUNC_HANDLE),
            Value::Object(o) => {
                self._objects.push(o.clone());
                (TVMValue { v_handle: o.legacy_handle() }, tc::OBJECT_HANDLE)
            }
        };
        self.values.push(val);
        self.codes.push(code);
        Ok(())
    }

    pub fn args(&self) -> Args<'_> {
        // SAFETY: every value was made by `push` from a live Rust value this buffer owns or
        // borrows from the caller's `Value`s, with the matching type code.
        unsafe { Args::new(&self.values, &self.codes) }
    }
}

type Body = dyn Fn(Args<'_>, &mut Value) -> Result<()> + Send + Sync;

/// Payload of a packed-function object: tvm-ffi's function cell (`TVMFFIFunctionCell`, which
/// tvm-ffi code calls inline through the object), then the body.
#[repr(C)]
pub struct FuncObj {
    safe_call: TVMFFISafeCallType,
    cpp_call: *mut c_void,
    body: Box<Body>,
    /// A foreign callable this function forwards to (its cell's `safe_call` is then
    /// `forward_safe_call`, so tvm-ffi callers reach it with no conversion).
    foreign: Option<ForeignCallable>,
    /// Whether `body` runs the function for TVM 0.18 and Rust callers (otherwise they go
    /// through the cell, converted).
    has_body: bool,
}

/// A handle foreign code gave the runtime and the function that releases it: run once, when
/// this is dropped (a foreign callable's context, an opaque object's handle).
#[repr(C)]
pub struct ForeignHandle {
    pub handle: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

impl Drop for ForeignHandle {
    fn drop(&mut self) {
        if let Some(d) = self.deleter {
            // SAFETY: the deleter given with the handle, called once.
            unsafe { d(self.handle) };
        }
    }
}

/// A callable in tvm-ffi's convention made by foreign code (`TVMFFIFunctionCreate`): called as
/// `call(context, args, num_args, result)`; the context is released when the function dies.
pub struct ForeignCallable {
    pub call: TVMFFISafeCallType,
    pub context: ForeignHandle,
}

/// The cell's `safe_call` of a function over a [`ForeignCallable`]: the foreign call itself.
///
/// # Safety
/// As any `safe_call`: `handle` is a live function object made by `PackedFunc::from_foreign`.
unsafe extern "C" fn forward_safe_call(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> i32 {
    // SAFETY: the caller's contract: a live `Obj<FuncObj>`.
    let f = unsafe { &(*(handle as *const crate::runtime::object::header::Obj<FuncObj>)).data };
    match &f.foreign {
        // SAFETY: the foreign callable's own convention, with the caller's arguments.
        Some(c) => unsafe { (c.call)(c.context.handle, args, num_args, result) },
        None => -1,
    }
}

impl FuncObj {
    /// A function whose every caller goes through its cell's `safe_call` (Rust and TVM 0.18
    /// callers too, converted: [`PackedFunc::call_into`]), so it has no Rust body of its own.
    fn called_through_cell(safe_call: TVMFFISafeCallType, foreign: Option<ForeignCallable>) -> FuncObj {
        let body = |_: Args<'_>, _: &mut Value| Err(Error::internal("a tvm-ffi function is called through its cell"));
        FuncObj { safe_call, cpp_call: std::ptr::null_mut(), body: Box::new(body), foreign, has_body: false }
    }
}

// SAFETY: `cpp_call` is always NULL (no C++ entry); the body is Send + Sync.
unsafe impl Send for FuncObj {}
// SAFETY: as above.
unsafe impl Sync for FuncObj {}

impl ObjectType for FuncObj {
    const TYPE_INDEX: u32 = type_index::PACKED_FUNC;
    const LAYOUT_SHARED: bool = true;
}

/// A reference-counted packed function.
pub type PackedFunc = ObjPtr<FuncObj>;

impl PackedFunc {
    /// Wrap a Rust closure that writes its result into the given slot.
    pub fn from_fn(f: impl Fn(Args<'_>, &mut Value) -> Result<()> + Send + Sync + 'static) -> PackedFunc {
        PackedFunc::new(FuncObj {
            safe_call: ffi_safe_call,
            cpp_call: std::ptr::null_mut(),
            body: Box::new(f),
            foreign: None,
            has_body: true,
        })
    }

    /// A kernel in tvm-ffi's convention (a library's `__tvm_ffi_<name>`): its cell's `safe_call`
    /// is the kernel itself, so tvm-ffi callers (apache-tvm's VM) call it with no conversion and
    /// no call between; TVM 0.18 and Rust callers run `legacy`, which converts their arguments
    /// and calls it. The kernel gets the function object as its unused first argument.
    pub fn from_kernel(
        kernel: TVMFFISafeCallType,
        legacy: impl Fn(Args<'_>, &mut Value) -> Result<()> + Send + Sync + 'static,
    ) -> PackedFunc {
        PackedFunc::new(FuncObj {
            safe_call: kernel,
            cpp_call: std::ptr::null_mut(),
            body: Box::new(legacy),
            foreign: None,
            has_body: true,
        })
    }

    /// A function over a foreign callable in tvm-ffi's convention: tvm-ffi callers reach it
    /// through the cell directly; TVM 0.18 and Rust callers through [`PackedFunc::call_into`].
    pub fn from_foreign(callable: ForeignCallable) -> PackedFunc {
        // With no context to pass, the cell holds the callable itself (it then gets the function
        // object as its first argument, as in tvm-ffi): one call less.
        let direct = callable.context.handle.is_null() && callable.context.deleter.is_none();
        let safe_call = if direct { callable.call } else { forward_safe_call };
        PackedFunc::new(FuncObj::called_through_cell(safe_call, Some(callable)))
    }

    /// A function written in tvm-ffi's convention: `f` gets the caller's views and returns an
    /// owned value. tvm-ffi callers reach it with no conversion (the runtime's hot `ffi.*`
    /// globals); TVM 0.18 and Rust callers through [`PackedFunc::call_into`], converted.
    pub fn from_ffi<F>(f: F) -> PackedFunc
    where
        F: Fn(&[TVMFFIAny]) -> Result<TVMFFIAny> + Send + Sync + 'static,
    {
        // `f` beside the cell, which calls it directly (it gets the function object).
        PackedFunc::new_with_tail(FuncObj::called_through_cell(ffi_body_call::<F>, None), f)
    }

    /// Wrap a Rust closure that returns its result.
    pub fn from_typed(f: impl Fn(Args<'_>) -> Result<Value> + Send + Sync + 'static) -> PackedFunc {
        Self::from_fn(move |args, ret| {
            *ret = f(args)?;
            Ok(())
        })
    }

    /// Whether this is a kernel made by [`PackedFunc::from_kernel`] (its cell calls the kernel
    /// itself, so [`PackedFunc::call_any`] reaches it with no conversion).
    pub fn is_kernel(&self) -> bool {
        // SAFETY: a live object's header; the payload is read only when this runtime made it.
        let made_here = unsafe { (*self.as_header()).padding == crate::runtime::object::header::MADE_HERE };
        made_here && self.has_body && self.safe_call as *const () != ffi_safe_call as *const ()
    }

    /// Call with borrowed C-representation arguments, writing the result into `ret`.
    pub fn call_into(&self, args: Args<'_>, ret: &mut Value) -> Result<()> {
        // Only the cell of a function made elsewhere (C++) is ours to read; `made_here` reads
        // the header alone.
        // SAFETY: a live object's header.
        let made_here = unsafe { (*self.as_header()).padding == crate::runtime::object::header::MADE_HERE };
        if made_here && self.has_body {
            return (self.body)(args, ret);
        }
        self.call_foreign(args, ret)
    }

    /// A function object made by foreign tvm-ffi code: only its cell is ours to read, so the
    /// call goes through its `safe_call`.
    fn call_foreign(&self, args: Args<'_>, ret: &mut Value) -> Result<()> {
        let vals = (0..args.len()).map(|i| args.to_value(i)).collect::<Result<Vec<_>>>()?;
        // SAFETY: a live function object (we hold a reference); its cell's `safe_call` takes
        // the object itself.
        *ret = unsafe { call_safe(self.safe_call, self.as_header() as *mut c_void, vals)? };
        Ok(())
    }

    /// Call with borrowed arguments and return the result.
    pub fn call_args(&self, args: Args<'_>) -> Result<Value> {
        let mut ret = Value::Null;
        self.call_into(args, &mut ret)?;
        Ok(ret)
    }

    /// Call in tvm-ffi's own convention: `args` are views the caller keeps, the result is an
    /// owned value. Objects pass as the objects they are (an `ffi.Bytes` stays that object), so
    /// a callee that hands an argument back returns the same object.
    pub fn call_any(&self, args: &[TVMFFIAny]) -> Result<TVMFFIAny> {
        let n = i32::try_from(args.len()).map_err(|_| Error::value("too many arguments"))?;
        let mut out = TVMFFIAny::NONE;
        let generation = crate::runtime::base::error::last_error_generation();
        // SAFETY: a live function object (we hold a reference) called through its cell, which
        // takes the object itself, `n` valid views and a writable result.
        let rc = unsafe { (self.safe_call)(self.as_header() as *mut c_void, args.as_ptr(), n, &mut out) };
        if rc != 0 {
            return Err(crate::runtime::base::error::error_from_callee(generation, || {
                Error::runtime(format!("a tvm-ffi function returned {rc} without raising an error"))
            }));
        }
        Ok(out)
    }

    /// Call with owned Rust values.
    pub fn call(&self, vals: &[Value]) -> Result<Value> {
        let buf = ArgBuffer::from_values(vals)?;
        self.call_args(buf.args())
    }
}

// ---- tvm-ffi's values and calling convention -------------------------------------------------

/// The `safe_call` of every function made here: tvm-ffi's convention (`TVMFFIAny` arguments, an
/// owned `TVMFFIAny` result, 0 or -1 with the error raised on this thread) over the body.
///
/// # Safety
/// `handle` must be a live function object made here; `args` must point to `num_args` valid
/// `TVMFFIAny` views; `result` must be writable.
unsafe extern "C" fn ffi_safe_call(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> i32 {
    let body = |views: &[TVMFFIAny]| -> Result<TVMFFIAny> {
        // SAFETY: the caller's contract: a live `Obj<FuncObj>` behind `handle`, kept alive by the
        // caller for the call (no reference is taken, none dropped).
        let f = std::mem::ManuallyDrop::new(unsafe { PackedFunc::from_raw(handle as *mut ObjectHeader) });
        // Arguments that need no storage of their own pass as TVM 0.18 values on the stack.
        let (n, mut values, mut codes) = (views.len(), [TVMValue::null(); DIRECT_ARGS], [0i32; DIRECT_ARGS]);
        // SAFETY: valid views (caller contract).
        if n <= DIRECT_ARGS
            && views.iter().zip(&mut values).zip(&mut codes).all(|((a, v), c)| unsafe { direct(a, v, c) })
        {
            // SAFETY: each value was written from its view with the matching code; the views
            // (and the objects they name) stay valid for the call.
            return Ok(f.call_args(unsafe { Args::new(&values[..n], &codes[..n]) })?.into_any());
        }
        // SAFETY: valid views (caller contract).
        let vals = views.iter().map(|a| unsafe { Value::from_any_view(a) }).collect::<Result<Vec<_>>>()?;
        let buf = ArgBuffer::from_values(&vals)?;
        Ok(f.call_args(buf.args())?.into_any())
    };
    // SAFETY: the caller's contract, passed on.
    unsafe { answer_safe_call(args, num_args, result, body) }
}

/// Run `body` on a tvm-ffi call's views and answer as tvm-ffi's convention does: 0 with its
/// value in `*result`, or -1 with its error (a panic's message included) raised on this thread.
///
/// # Safety
/// `args` points to `num_args` valid views (NULL only with none); `result` is writable.
unsafe fn answer_safe_call(
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
    body: impl FnOnce(&[TVMFFIAny]) -> Result<TVMFFIAny>,
) -> i32 {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let n = usize::try_from(num_args).map_err(|_| Error::value(format!("negative num_args {num_args}")))?;
        // SAFETY: `num_args` views (caller contract); NULL only with none.
        let views = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(args, n) } };
        body(views)
    }));
    let err = match outcome {
        Ok(Ok(any)) => {
            // The slot may hold a value of an earlier call: C++ callers pass an `Any` they reuse
            // (TVM's time evaluator does), which tvm-ffi's `Function::CallPacked` assigns to,
            // releasing what it held. So does this, and only once the call succeeded.
            // SAFETY: writable, so readable (caller contract); a held object is the slot's
            // reference, released once.
            unsafe {
                let old = std::mem::replace(&mut *result, any);
                if old.type_index >= fti::STATIC_OBJECT_BEGIN {
                    crate::runtime::object::header::release_any(&old);
                }
            }
            return 0;
        }
        Ok(Err(e)) => e,
        Err(p) => {
            Error::internal(format!("panic in a packed function: {}", crate::runtime::base::error::panic_message(&*p)))
        }
    };
    let _ = std::panic::catch_unwind(|| crate::runtime::base::error::set_last_error(&err));
    -1
}

/// The `safe_call` of a [`PackedFunc::from_ffi`] body: tvm-ffi's convention, panics caught.
///
/// # Safety
/// `handle` is a function made by `from_ffi` with `F`; `args` points to `num_args` valid views;
/// `result` is writable.
unsafe extern "C" fn ffi_body_call<F>(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> i32
where
    F: Fn(&[TVMFFIAny]) -> Result<TVMFFIAny> + Send + Sync + 'static,
{
    // SAFETY: the caller's contract; `F` is the function's tail, alive while it is.
    unsafe { answer_safe_call(args, num_args, result, |views| (*tail_of::<FuncObj, F>(handle))(views)) }
}

/// Arguments a call from tvm-ffi converts on the stack.
const DIRECT_ARGS: usize = 8;

/// Write the TVM 0.18 form of a tvm-ffi view that needs no storage of its own into `v` / `c`
/// (objects by their 0.18 handles, a tensor by its `DLTensor`, an `ffi.Bytes` by its cell, which
/// is a `TVMByteArray`, a small string by its bytes in place); false for the rest (byte
/// arrays, unterminated small strings, ...), which take the owned path.
///
/// # Safety
/// `a` must be a valid view.
unsafe fn direct(a: &TVMFFIAny, v: &mut TVMValue, c: &mut i32) -> bool {
    let p = a.as_ptr();
    let (value, code) = match a.type_index {
        fti::NONE => (TVMValue::null(), tc::NULLPTR),
        fti::INT => (TVMValue { v_int64: a.as_i64() }, tc::INT),
        fti::BOOL => (TVMValue { v_int64: a.as_i64() }, tc::BOOL),
        fti::FLOAT => (TVMValue { v_float64: a.as_f64() }, tc::FLOAT),
        fti::OPAQUE_PTR => (TVMValue { v_handle: p }, tc::OPAQUE_HANDLE),
        fti::DLTENSOR_PTR => (TVMValue { v_handle: p }, tc::DLTENSOR_HANDLE),
        fti::RAW_STR if !p.is_null() => (TVMValue { v_str: p as *const c_char }, tc::STR),
        // In place, in the caller's argument array (which outlives the call).
        fti::SMALL_STR => match a.small_c_str() {
            Some(s) => (TVMValue { v_str: s }, tc::STR),
            None => return false,
        },
        t if t >= fti::STATIC_OBJECT_BEGIN && !p.is_null() => {
            let header = p as *mut ObjectHeader;
            // A foreign object takes the owned path (a foreign tensor becomes a view of ours).
            // SAFETY: a live object (caller contract).
            if unsafe { (*header).padding } != crate::runtime::object::header::MADE_HERE {
                return false;
            }
            match t as u32 {
                type_index::NDARRAY => {
                    (TVMValue { v_handle: header_offset(header, DLTENSOR_OFFSET) }, tc::NDARRAY_HANDLE)
                }
                type_index::BYTES => {
                    (TVMValue { v_handle: header_offset(header, size_of::<ObjectHeader>()) }, tc::BYTES)
                }
                type_index::MODULE => (TVMValue { v_handle: legacy::handle(header) }, tc::MODULE_HANDLE),
                type_index::PACKED_FUNC => (TVMValue { v_handle: legacy::handle(header) }, tc::PACKED_FUNC_HANDLE),
                _ => (TVMValue { v_handle: legacy::handle(header) }, tc::OBJECT_HANDLE),
            }
        }
        _ => return false,
    };
    (*v, *c) = (value, code);
    true
}

/// `header + offset` as a handle (address arithmetic only).
fn header_offset(header: *mut ObjectHeader, offset: usize) -> *mut c_void {
    (header as *mut u8).wrapping_add(offset) as *mut c_void
}

impl Value {
    /// The value a `TVMFFIAny` view holds; objects get a new reference (an `ffi.String` stays
    /// an object, which reads as a string), inline and raw strings and bytes are copied.
    ///
    /// # Safety
    /// `a` must be a valid view: its pointers valid for the call, its object live.
    pub unsafe fn from_any_view(a: &TVMFFIAny) -> Result<Value> {
        Ok(match a.type_index {
            fti::NONE => Value::Null,
            fti::INT => Value::Int(a.as_i64()),
            fti::BOOL => Value::Bool(a.as_i64() != 0),
            fti::FLOAT => Value::Float(a.as_f64()),
            fti::OPAQUE_PTR => Value::Handle(a.as_ptr()),
            fti::DATA_TYPE => Value::DataType(a.as_pod()),
            fti::DEVICE => Value::Device(a.as_pod()),
            // SAFETY: a valid tensor for the call (contract above).
            fti::DLTENSOR_PTR => Value::DLTensor(unsafe { RawTensor::new(a.as_ptr() as *mut DLTensor) }),
            fti::RAW_STR if !a.as_ptr().is_null() => {
                // SAFETY: a NUL-terminated string (contract above).
                text_value(unsafe { CStr::from_ptr(a.as_ptr() as *const c_char) }.to_bytes())
            }
            fti::BYTE_ARRAY_PTR if !a.as_ptr().is_null() => {
                // SAFETY: a valid byte array (contract above).
                Value::Bytes(unsafe { byte_array(&*(a.as_ptr() as *const TVMFFIByteArray)) }.to_vec())
            }
            fti::SMALL_STR => text_value(&a.small_bytes()),
            fti::SMALL_BYTES => Value::Bytes(a.small_bytes()),
            fti::OBJECT_RVALUE_REF if !a.as_ptr().is_null() => {
                // SAFETY: a pointer to an object pointer (contract above).
                let header = unsafe { *(a.as_ptr() as *const *mut ObjectHeader) };
                // SAFETY: as for any object view.
                unsafe { object_value(header)? }
            }
            // SAFETY: an object view (contract above).
            t if t >= fti::STATIC_OBJECT_BEGIN => unsafe { object_value(a.as_ptr() as *mut ObjectHeader)? },
            t => return Err(Error::type_error(format!("cannot take a tvm-ffi value of type index {t}"))),
        })
    }

    /// Take over an owned `TVMFFIAny` (its object reference passes to the value, or is released
    /// when the value copies it).
    ///
    /// # Safety
    /// As [`Value::from_any_view`], and the caller owns the value's reference.
    pub unsafe fn adopt_any(a: TVMFFIAny) -> Result<Value> {
        // SAFETY: the caller's contract.
        let v = unsafe { Value::from_any_view(&a) };
        // SAFETY: the caller's reference, no longer needed (the view took its own).
        unsafe { crate::runtime::object::header::release_any(&a) };
        v
    }

    /// The tvm-ffi type index [`Value::into_any`] gives this value (short strings and bytes are
    /// inline kinds, objects their own type's index).
    pub fn ffi_type_index(&self) -> i32 {
        use crate::runtime::object::type_table::type_index as ti;
        let object = |index: u32| index as i32;
        match self {
            Value::Null => fti::NONE,
            Value::Int(_) => fti::INT,
            Value::Bool(_) => fti::BOOL,
            Value::Float(_) => fti::FLOAT,
            Value::Handle(_) => fti::OPAQUE_PTR,
            Value::DataType(_) => fti::DATA_TYPE,
            Value::Device(_) => fti::DEVICE,
            Value::DLTensor(_) => fti::DLTENSOR_PTR,
            Value::Str(s) if s.len() <= 7 => fti::SMALL_STR,
            Value::RawStr(s) if s.as_bytes().len() <= 7 => fti::SMALL_STR,
            Value::Str(_) | Value::RawStr(_) => object(ti::STRING),
            Value::Bytes(b) if b.len() <= 7 => fti::SMALL_BYTES,
            Value::Bytes(_) => object(ti::BYTES),
            Value::NDArray(_) => object(ti::NDARRAY),
            Value::Func(_) => object(ti::PACKED_FUNC),
            Value::Module(m) => object(m.clone().into_object().type_index()),
            Value::Object(o) if o.type_index() == ti::ARRAY => object(ti::FFI_ARRAY),
            Value::Object(o) => object(o.type_index()),
        }
    }

    /// This value as an owned `TVMFFIAny`: objects carry one reference; strings and bytes of up
    /// to 7 bytes are held inline, longer ones become `ffi.String` / `ffi.Bytes` objects.
    pub fn into_any(self) -> TVMFFIAny {
        let obj = |h: *mut ObjectHeader| {
            // SAFETY: a live header.
            TVMFFIAny::ptr(unsafe { (*h).type_index } as i32, h as *const c_void)
        };
        match self {
            Value::Null => TVMFFIAny::NONE,
            Value::Int(v) => TVMFFIAny::int(fti::INT, v),
            Value::Bool(b) => TVMFFIAny::int(fti::BOOL, b as i64),
            Value::Float(v) => TVMFFIAny::float(v),
            Value::Handle(p) => TVMFFIAny::ptr(fti::OPAQUE_PTR, p),
            Value::DataType(t) => TVMFFIAny::pod(fti::DATA_TYPE, t),
            Value::Device(d) => TVMFFIAny::pod(fti::DEVICE, d),
            Value::DLTensor(t) => TVMFFIAny::ptr(fti::DLTENSOR_PTR, t.as_ptr() as *const c_void),
            Value::Str(s) => string_any(s.as_bytes()),
            Value::RawStr(s) => string_any(s.as_bytes()),
            Value::Bytes(b) if b.len() <= 7 => TVMFFIAny::small(fti::SMALL_BYTES, &b),
            Value::Bytes(b) => obj(BytesObj::new(&b).into_raw()),
            Value::NDArray(a) => obj(a.into_raw()),
            Value::Module(m) => obj(m.into_object().into_raw()),
            Value::Func(f) => obj(f.into_raw()),
            Value::Object(o) => obj(ffi_view_of(o).into_raw()),
        }
    }
}

/// An object as tvm-ffi code sees it: a TVM 0.18 `Array` (what TVM 0.18's functions and this
/// runtime's return for tuples) becomes an `ffi.Array` of the same items, its nested arrays too
/// (tvm-ffi knows no `Array` type); any other object is itself.
fn ffi_view_of(o: ObjectRef) -> ObjectRef {
    let Some(a) = o.downcast::<ArrayObj>() else { return o };
    let items = a.tail().iter().map(|i| i.as_ref().map_or(TVMFFIAny::NONE, |r| Value::from_object(r.get()).into_any()));
    FfiArrayObj::new(items.collect()).to_object_ref()
}

/// Call a callable in tvm-ffi's convention, `call(context, args, n, result)`, with owned
/// arguments (released after the call), and take its result.
///
/// # Safety
/// `call` must follow tvm-ffi's convention for `context`.
pub unsafe fn call_safe(call: TVMFFISafeCallType, context: *mut c_void, vals: Vec<Value>) -> Result<Value> {
    let anys: Vec<TVMFFIAny> = vals.into_iter().map(Value::into_any).collect();
    let mut out = TVMFFIAny::NONE;
    let generation = crate::runtime::base::error::last_error_generation();
    // SAFETY: the caller's contract; `anys.len()` valid arguments and a writable result.
    let rc = unsafe { call(context, anys.as_ptr(), anys.len() as i32, &mut out) };
    for a in &anys {
        // SAFETY: each was made owned by `into_any` and is released once here.
        unsafe { crate::runtime::object::header::release_any(a) };
    }
    if rc != 0 {
        return Err(crate::runtime::base::error::error_from_callee(generation, || {
            Error::runtime(format!("a tvm-ffi function returned {rc} without raising an error"))
        }));
    }
    // SAFETY: the callee's owned result.
    unsafe { Value::adopt_any(out) }
}

/// A string as an owned `TVMFFIAny`: inline up to 7 bytes, else an `ffi.String`.
pub fn string_any(bytes: &[u8]) -> TVMFFIAny {
    if bytes.len() <= 7 {
        return TVMFFIAny::small(fti::SMALL_STR, bytes);
    }
    let h = StringObj::from_bytes(bytes).into_raw();
    TVMFFIAny::ptr(fti::STATIC_OBJECT_BEGIN + 1, h as *const c_void)
}

fn text_value(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(s) => Value::Str(s.to_string()),
        Err(_) => Value::RawStr(CString::new(bytes.split(|&b| b == 0).next().unwrap_or(&[])).expect("no NUL left")),
    }
}

/// The bytes of a `TVMFFIByteArray`.
///
/// # Safety
/// `a` must describe `size` readable bytes (or have size 0).
pub unsafe fn byte_array(a: &TVMFFIByteArray) -> &[u8] {
    if a.size == 0 || a.data.is_null() {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(a.data as *const u8, a.size) }
}

/// The value of an object view (NULL: none); strings and bytes are copied.
///
/// # Safety
/// `header` must be NULL or a live object.
unsafe fn object_value(header: *mut ObjectHeader) -> Result<Value> {
    if header.is_null() {
        return Ok(Value::Null);
    }
    // SAFETY: live (contract above); the reference taken is the value's. An `ffi.String` stays
    // the object it is (callers read it as a string; passed on, it is the same object).
    let obj = unsafe { ObjectRef::from_borrowed(header) };
    if let Some(b) = obj.downcast::<BytesObj>() {
        return Ok(Value::Bytes(b.as_bytes()?.to_vec()));
    }
    Ok(Value::from_object(obj))
}

/// What a kind of module provides.
pub trait ModuleNode: Send + Sync + 'static {
    /// TVM's type key (`library`, `GraphExecutorFactory`, ...).
    fn type_key(&self) -> &str;
    /// A function this module itself provides (imports are searched by [`Module`]).
    /// `this` is the module object, for functions that must keep it alive.
    fn get_function(&self, name: &str, this: &Module) -> Result<Option<PackedFunc>>;
    /// Whether this module itself provides `name` (a C++ module answers from its own list, as
    /// a static library does for the functions it will link).
    fn implements_function(&self, name: &str, this: &Module) -> Result<bool> {
        Ok(self.get_function(name, this)?.is_some())
    }
    /// The imports a module keeps itself (a C++ module, in its own `imports_`); `None` when the
    /// runtime keeps them ([`Module::import`]).
    fn own_imports(&self) -> Result<Option<Vec<Module>>> {
        Ok(None)
    }
    /// The raw compiled function behind `name`, for callers that invoke kernels directly
    /// (the graph executor's run loop). Only library modules have them.
    fn get_backend_function(&self, _name: &str) -> Option<TVMBackendPackedCFunc> {
        None
    }
    /// tvm-ffi's documentation or metadata text of a function this module itself provides.
    fn function_text(&self, _which: FunctionText, _name: &str) -> Result<Option<String>> {
        Ok(None)
    }
    /// tvm-ffi's property mask ([`module_property`]): the runtime's modules run, and none is
    /// written back to bytes.
    fn property_mask(&self) -> i64 {
        module_property::RUNNABLE
    }
    /// Source text in `format`; empty when the module has none.
    fn inspect_source(&self, _format: &str) -> Result<String> {
        Ok(String::new())
    }
    /// The formats [`ModuleNode::write_to_file`] writes.
    fn write_formats(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    fn write_to_file(&self, _file: &str, _format: &str) -> Result<()> {
        Err(Error::unsupported(format!("Module[{}] does not support WriteToFile", self.type_key())))
    }
    fn as_any(&self) -> &dyn Any;
}

/// Which text of a function [`ModuleNode::function_text`] gives; a library keeps each under a
/// symbol of its own (`<prefix><function name>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionText {
    Doc,
    Metadata,
}

impl FunctionText {
    pub fn symbol_prefix(self) -> &'static str {
        match self {
            FunctionText::Doc => "__tvm_ffi__doc_",
            FunctionText::Metadata => "__tvm_ffi__metadata_",
        }
    }
}

/// tvm-ffi's module property bits (`Module::ModulePropertyMask`).
pub mod module_property {
    pub const BINARY_SERIALIZABLE: i64 = 0b001;
    pub const RUNNABLE: i64 = 0b010;
    pub const COMPILATION_EXPORTABLE: i64 = 0b100;
}

/// Payload of a module object. It starts as a C++ `ModuleObj`'s data does (its `imports_` array,
/// which C++ code and tvm-ffi's reflected field read, and an unused lookup cache), since C++
/// code sees this object as one (see [`Module::from_node`]); the runtime keeps its imports in
/// `imports`.
#[repr(C)]
pub struct ModuleObj {
    /// The imports as C++'s `imports_` array: an array of `import_arrays`, replaced whole on
    /// each change (under [`IMPORT_LOCK`]).
    cxx_imports: AtomicPtr<ObjectHeader>,
    cxx_lookup_cache: usize,
    node: Box<dyn ModuleNode>,
    imports: RwLock<Vec<Module>>,
    /// Every array `cxx_imports` has pointed to, kept until the module dies, so a reader that
    /// loaded one never sees it freed (imports change rarely: a few small arrays).
    import_arrays: Mutex<Vec<ObjectRef>>,
    /// Functions handed to compiled code by `TVMBackendGetFuncFromEnv` (borrowed by it).
    pub(crate) env_cache: Mutex<HashMap<String, PackedFunc>>,
}

impl ObjectType for ModuleObj {
    const TYPE_INDEX: u32 = type_index::MODULE;
}

/// A reference-counted module.
pub type Module = ObjPtr<ModuleObj>;

/// How far a C++ `ModuleObj*` points before the module's object header: its vtable pointer. A
/// module made here keeps one there too ([`Module::from_node`]), so `header - 8` is a C++ view
/// of either kind of module.
pub const CXX_VPTR_BYTES: usize = 8;

/// Serializes import edits so that the cycle check and the insertion are atomic.
static IMPORT_LOCK: Mutex<()> = Mutex::new(());

impl ModuleObj {
    pub fn node(&self) -> &dyn ModuleNode {
        &*self.node
    }
    pub fn type_key(&self) -> &str {
        self.node.type_key()
    }
    /// A snapshot of the import list.
    pub fn imports(&self) -> Vec<Module> {
        self.imports.read().clone()
    }
}

impl Module {
    pub fn from_node(node: impl ModuleNode) -> Module {
        static EMPTY: once_cell::sync::Lazy<ObjectRef> = once_cell::sync::Lazy::new(|| {
            let empty = crate::runtime::container::FfiArrayObj::new(Vec::new());
            empty.to_object_ref()
        });
        let m = Module::new(ModuleObj {
            cxx_imports: AtomicPtr::new(EMPTY.as_header()),
            cxx_lookup_cache: 0,
            node: Box::new(node),
            imports: RwLock::new(Vec::new()),
            import_arrays: Mutex::new(Vec::new()),
            env_cache: Mutex::new(HashMap::new()),
        });
        extern "C" {
            /// The vtable of the C++ part's view of a runtime module (`cxx/ffi_cxx_api.cc`).
            fn tvmrt_cxx_runtime_module_vptr() -> *const c_void;
        }
        // SAFETY: the 8 bytes before the header are the block's allocation-header slot, which
        // this runtime's deleters never read; a C++ `ModuleObj` keeps its vptr there, so C++
        // code calling a virtual function on this module reaches the view's (its functions
        // take the object as `this + 8`, i.e. this header). The C++ part returns a static vtable.
        unsafe {
            ((m.as_header() as *mut u8).sub(CXX_VPTR_BYTES) as *mut *const c_void)
                .write(tvmrt_cxx_runtime_module_vptr())
        };
        m
    }

    /// Whether `target` is reachable from `self` through imports (or is `self`).
    fn reaches(&self, target: &Module) -> bool {
        let mut stack = vec![self.clone()];
        let mut seen = std::collections::HashSet::new();
        while let Some(m) = stack.pop() {
            if Module::ptr_eq(&m, target) {
                return true;
            }
            if seen.insert(m.as_header() as usize) {
                stack.extend(m.imports());
            }
        }
        false
    }

    /// Append `dep` to this module's imports; an import that would close a cycle is an error.
    pub fn import(&self, dep: &Module) -> Result<()> {
        let _guard = IMPORT_LOCK.lock();
        if dep.reaches(self) {
            return Err(Error::value(format!(
                "cannot import module `{}` into `{}`: the import would create a cycle",
                dep.type_key(),
                self.type_key()
            )));
        }
        self.imports.write().push(dep.clone());
        self.publish_imports();
        Ok(())
    }

    /// Drop every import (and the functions looked up through them).
    pub fn clear_imports(&self) {
        let _guard = IMPORT_LOCK.lock();
        self.imports.write().clear();
        self.env_cache.lock().clear();
        self.publish_imports();
    }

    /// Point `cxx_imports` at a new array of the current imports (the caller holds
    /// [`IMPORT_LOCK`]).
    fn publish_imports(&self) {
        let items = self.imports().into_iter().map(|m| m.into_any()).collect();
        let array = FfiArrayObj::new(items).to_object_ref();
        self.cxx_imports.store(array.as_header(), Ordering::Release);
        self.import_arrays.lock().push(array);
    }

    /// Look up `name` in this module, then (if asked) depth-first through its imports.
    pub fn get_function(&self, name: &str, query_imports: bool) -> Result<Option<PackedFunc>> {
        if let Some(f) = self.node.get_function(name, self)? {
            return Ok(Some(f));
        }
        if query_imports {
            for m in self.searched_imports()? {
                if let Some(f) = m.get_function(name, true)? {
                    return Ok(Some(f));
                }
            }
        }
        Ok(None)
    }

    /// Whether this module (then, if asked, one of its imports, depth-first) provides `name`.
    pub fn implements_function(&self, name: &str, query_imports: bool) -> Result<bool> {
        if self.node.implements_function(name, self)? {
            return Ok(true);
        }
        if query_imports {
            for m in self.searched_imports()? {
                if m.implements_function(name, true)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The imports a lookup searches: the module's own list where it keeps one (C++ modules),
    /// else the runtime's.
    fn searched_imports(&self) -> Result<Vec<Module>> {
        Ok(self.node.own_imports()?.unwrap_or_else(|| self.imports()))
    }

    /// The raw compiled function behind `name`, searching imports depth-first. The function
    /// stays valid while this module lives.
    pub fn get_backend_function(&self, name: &str) -> Option<TVMBackendPackedCFunc> {
        self.node
            .get_backend_function(name)
            .or_else(|| self.imports().iter().find_map(|m| m.get_backend_function(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function in tvm-ffi's convention answers tvm-ffi callers through its cell and TVM 0.18
    /// or Rust callers through `call`, alike; its errors and panics are errors of the call.
    #[test]
    fn ffi_convention_functions_answer_both_conventions() {
        let sum = PackedFunc::from_ffi(|args| {
            if args.iter().any(|a| a.type_index != fti::INT) {
                return Err(Error::type_error("sum takes ints"));
            }
            if args.len() == 3 {
                panic!("three is too many");
            }
            Ok(TVMFFIAny::int(fti::INT, args.iter().map(|a| a.as_i64()).sum()))
        });
        assert_eq!(sum.call(&[Value::Int(2), Value::Int(40)]).unwrap().as_int().unwrap(), 42);
        let args = [TVMFFIAny::int(fti::INT, 5), TVMFFIAny::int(fti::INT, 6)];
        let mut out = TVMFFIAny::NONE;
        // SAFETY: the function's own cell, called with valid views and a writable result.
        let rc = unsafe { (sum.safe_call)(sum.as_header() as *mut c_void, args.as_ptr(), 2, &mut out) };
        assert_eq!((rc, out.type_index, out.as_i64()), (0, fti::INT, 11));
        let e = sum.call(&[Value::Str("x".into())]).unwrap_err();
        assert!(e.message().contains("sum takes ints"), "{e}");
        let e = sum.call(&[Value::Int(1), Value::Int(2), Value::Int(3)]).unwrap_err();
        assert!(e.message().contains("three is too many"), "{e}");
        // A result slot that holds an object (a reused C++ `Any`) is assigned to: the new value
        // written, the held one released. A failed call leaves it as it was.
        let mut out = sum.clone().into_any();
        assert_eq!(sum.ref_count(), 2);
        // SAFETY: as above.
        let rc = unsafe { (sum.safe_call)(sum.as_header() as *mut c_void, args.as_ptr(), 2, &mut out) };
        assert_eq!((rc, out.type_index, out.as_i64()), (0, fti::INT, 11));
        assert_eq!(sum.ref_count(), 1, "the slot's reference was released");
        let mut out = sum.clone().into_any();
        let bad = [TVMFFIAny::int(fti::INT, 5); 3];
        // SAFETY: as above.
        let rc = unsafe { (sum.safe_call)(sum.as_header() as *mut c_void, bad.as_ptr(), 3, &mut out) };
        assert_eq!((rc, out.type_index), (-1, type_index::PACKED_FUNC as i32));
        assert_eq!(sum.ref_count(), 2, "a failed call leaves the slot and its reference");
        // SAFETY: the reference `into_any` made, released once.
        unsafe { crate::runtime::object::header::release_any(&out) };
    }

    #[test]
    fn call_rust_closure_with_mixed_args() {
        let f = PackedFunc::from_typed(|args| {
            let (a, b, s) = (args.int(0)?, args.float(1)?, args.string(2)?);
            Ok(Value::Str(format!("{a}:{b}:{s}")))
        });
        let r = f.call(&[Value::Int(3), Value::Float(0.5), "x".into()]).unwrap();
        assert_eq!(r.into_string().unwrap(), "3:0.5:x");
        let err = f.call(&[Value::Str("no".into()), Value::Float(0.5), "x".into()]).unwrap_err();
        assert_eq!(err.message(), "TypeError: argument 0: expected int, got str (type code 11)");
        let err = f.call(&[Value::Int(1)]).unwrap_err();
        assert!(err.message().starts_with("IndexError: argument 1 requested"), "{err}");
    }

    #[test]
    fn objects_travel_by_reference() {
        let arr = NDArray::empty(&[4], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        let echo = PackedFunc::from_typed(|args| Ok(Value::NDArray(args.ndarray(0)?)));
        let out = echo.call(&[Value::NDArray(arr.clone())]).unwrap().into_ndarray().unwrap();
        assert!(ObjPtr::ptr_eq(&arr, &out));
        assert_eq!(arr.ref_count(), 2);
        let f2 = PackedFunc::from_typed(|args| Ok(Value::Func(args.func(0)?)));
        let got = f2.call(&[Value::Func(echo.clone())]).unwrap().into_func().unwrap();
        assert!(ObjPtr::ptr_eq(&got, &echo));
        assert!(f2.call(&[Value::NDArray(arr)]).unwrap_err().message().contains("expected PackedFunc"));
    }
}
