//! What a VM register holds, and its conversions to and from the runtime's [`Value`]s (what
//! callers pass and get back) and the C representation kernels receive.

use super::executable::Constant;
use crate::abi::{type_code as tc, DLDataType, DLDevice, TVMValue};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::{
    array_object, shape_object, string_object, ArrayObj, FfiArrayObj, ShapeTupleObj, StringObj,
};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::header::ObjectRef;
use crate::runtime::tensor::ndarray::{copy_from_to, NDArray};
use std::ffi::{c_void, CString};
use std::sync::Arc;

/// A register's content.
#[derive(Clone, Default)]
pub enum VmValue {
    #[default]
    Null,
    Int(i64),
    Float(f64),
    DType(DLDataType),
    Str(Arc<str>),
    Shape(Arc<[i64]>),
    Tensor(NDArray),
    /// A buffer tensors are carved from (`alloc_storage`); bytes, 64-byte aligned.
    Storage(NDArray),
    Tuple(Arc<[VmValue]>),
    Func(Callable),
    /// The VM context (the `%vm` register), which allocating builtins take.
    Vm,
    /// Any other runtime object a caller or a function passed in (a module, a map, ...).
    Object(ObjectRef),
}

/// Something a call can invoke.
#[derive(Clone)]
pub enum Callable {
    /// An entry of the executable's function table.
    Function(u32),
    /// A VM function with arguments bound after the caller's (`make_closure`, `save_function`).
    Closure(Arc<(u32, Vec<VmValue>)>),
    Packed(PackedFunc),
}

impl VmValue {
    pub fn kind(&self) -> &'static str {
        match self {
            VmValue::Null => "None",
            VmValue::Int(_) => "int",
            VmValue::Float(_) => "float",
            VmValue::DType(_) => "DataType",
            VmValue::Str(_) => "String",
            VmValue::Shape(_) => "Shape",
            VmValue::Tensor(_) => "Tensor",
            VmValue::Storage(_) => "Storage",
            VmValue::Tuple(_) => "Tuple",
            VmValue::Func(_) => "Function",
            VmValue::Vm => "VirtualMachine",
            VmValue::Object(_) => "Object",
        }
    }

    pub fn from_constant(c: &Constant) -> VmValue {
        match c {
            Constant::Tensor(t) => VmValue::Tensor(t.clone()),
            Constant::Shape(d) => VmValue::Shape(d.as_slice().into()),
            Constant::Str(s) => VmValue::Str(s.as_str().into()),
            Constant::Int(v) => VmValue::Int(*v),
            Constant::Float(v) => VmValue::Float(*v),
            Constant::DType(t) => VmValue::DType(*t),
        }
    }

    /// The value with its tensors (in tuples too) on `dev`: each one elsewhere is copied there,
    /// as TVM's VM does with constants at initialization and with inputs it keeps.
    pub fn on_device(self, dev: DLDevice) -> Result<VmValue> {
        match self {
            VmValue::Tensor(t) if t.device() != dev => Ok(VmValue::Tensor(t.copy_to(dev)?)),
            VmValue::Tuple(items) => {
                Ok(VmValue::Tuple(items.iter().map(|v| v.clone().on_device(dev)).collect::<Result<_>>()?))
            }
            v => Ok(v),
        }
    }

    /// A caller's argument as a register value. A bare `DLTensor*` is refused, as TVM does:
    /// the VM keeps tensors beyond the call, so it needs a reference-counted NDArray.
    pub fn from_value(v: Value) -> Result<VmValue> {
        Ok(match v {
            Value::Null => VmValue::Null,
            Value::Int(i) => VmValue::Int(i),
            Value::Bool(b) => VmValue::Int(b as i64),
            Value::Float(f) => VmValue::Float(f),
            Value::DataType(t) => VmValue::DType(t),
            Value::Str(s) => VmValue::Str(s.into()),
            Value::NDArray(a) => VmValue::Tensor(a),
            Value::Func(f) => VmValue::Func(Callable::Packed(f)),
            // As TVM's VM: a bare DLTensor is copied into an array the VM owns (the caller's
            // memory is only borrowed for the call; the VM may keep its tensors beyond it).
            Value::DLTensor(raw) => {
                // SAFETY: a `RawTensor` is vouched for while it may be passed as an argument
                // (`RawTensor::new`'s contract); this conversion runs inside that call.
                let t = unsafe { TensorRef::new(&*raw.as_ptr()) };
                let copy = NDArray::empty(t.shape()?, t.dtype(), t.device())?;
                copy_from_to(t, copy.tensor())?;
                VmValue::Tensor(copy)
            }
            Value::RawStr(s) => VmValue::Str(s.to_string_lossy().into()),
            Value::Object(o) => Self::from_object(o)?,
            Value::Module(m) => VmValue::Object(m.to_object_ref()),
            other => {
                return Err(Error::type_error(format!(
                    "a VM function cannot take a value of type {}",
                    other.type_name()
                )))
            }
        })
    }

    /// Packed-call argument `i` as a register value: an NDArray handle (what callers pass
    /// most) straight to a tensor, anything else through [`VmValue::from_value`].
    pub fn from_arg(args: &Args<'_>, i: usize) -> Result<VmValue> {
        match args.code(i)? {
            tc::NDARRAY_HANDLE => args.ndarray(i).map(VmValue::Tensor),
            tc::INT => args.int(i).map(VmValue::Int),
            _ => Self::from_value(args.to_value(i)?),
        }
    }

    fn from_object(o: ObjectRef) -> Result<VmValue> {
        if let Some(s) = o.downcast::<ShapeTupleObj>() {
            return Ok(VmValue::Shape(s.dims()?.into()));
        }
        if let Some(s) = o.downcast::<StringObj>() {
            return Ok(VmValue::Str(s.to_string()?.into()));
        }
        if let Some(a) = o.downcast::<ArrayObj>() {
            let items = a.tail().iter().map(|i| match i {
                Some(o) => Self::from_value(Value::from_object(o.get())),
                None => Ok(VmValue::Null),
            });
            return Ok(VmValue::Tuple(items.collect::<Result<Vec<_>>>()?.into()));
        }
        if let Some(a) = o.downcast::<FfiArrayObj>() {
            // tvm-ffi's tuples (apache-tvm 0.2x callers pass `ffi.Array`s).
            // SAFETY: the array's elements are owned values, alive while `a` is.
            let items = a.items().iter().map(|i| Self::from_value(unsafe { Value::from_any_view(i) }?));
            return Ok(VmValue::Tuple(items.collect::<Result<Vec<_>>>()?.into()));
        }
        match Value::from_object(o.clone()) {
            Value::Object(_) => Ok(VmValue::Object(o)),
            v => Self::from_value(v),
        }
    }

    /// The value handed back to a caller: tensors as NDArrays, tuples as runtime `Array`s,
    /// shapes as `ShapeTuple`s. `closure` turns a VM function value into a packed function.
    pub fn into_value(self, closure: &dyn Fn(Callable) -> PackedFunc) -> Result<Value> {
        Ok(match self {
            VmValue::Null | VmValue::Vm => Value::Null,
            VmValue::Int(i) => Value::Int(i),
            VmValue::Float(f) => Value::Float(f),
            VmValue::DType(t) => Value::DataType(t),
            VmValue::Str(s) => Value::Str(s.to_string()),
            VmValue::Shape(d) => Value::Object(shape_object(&d)),
            VmValue::Tensor(a) | VmValue::Storage(a) => Value::NDArray(a),
            // An array of objects, which both generations read; tvm-ffi's arrays hold any
            // value, so a tuple holding plain values (ints, floats, ...) becomes one of those.
            VmValue::Tuple(items) if items.iter().all(VmValue::is_object) => {
                let objs = items.iter().map(|i| i.clone().into_object(closure)).collect::<Result<Vec<_>>>()?;
                Value::Object(array_object(objs))
            }
            VmValue::Tuple(items) => {
                let any = items.iter().map(|i| i.clone().into_value(closure).map(Value::into_any));
                Value::Object(FfiArrayObj::new(any.collect::<Result<Vec<_>>>()?).to_object_ref())
            }
            VmValue::Func(Callable::Packed(f)) => Value::Func(f),
            VmValue::Func(c) => Value::Func(closure(c)),
            VmValue::Object(o) => Value::Object(o),
        })
    }

    /// Whether the value is held as an object (a tuple item an array of objects can hold).
    fn is_object(&self) -> bool {
        !matches!(self, VmValue::Null | VmValue::Vm | VmValue::Int(_) | VmValue::Float(_) | VmValue::DType(_))
    }

    fn into_object(self, closure: &dyn Fn(Callable) -> PackedFunc) -> Result<ObjectRef> {
        let kind = self.kind();
        match self.into_value(closure)? {
            Value::NDArray(a) => Ok(a.to_object_ref()),
            Value::Object(o) => Ok(o),
            Value::Module(m) => Ok(m.to_object_ref()),
            Value::Func(f) => Ok(f.to_object_ref()),
            Value::Str(s) => Ok(string_object(&s)),
            _ => Err(Error::type_error(format!("a tuple returned by the VM holds a {kind}, which is not an object"))),
        }
    }
}

/// Arguments in the C representation for one packed call, with what keeps them alive.
#[derive(Default)]
pub struct CArgs {
    pub values: Vec<TVMValue>,
    pub codes: Vec<i32>,
    objects: Vec<ObjectRef>,
    strings: Vec<CString>,
}

// SAFETY: the raw pointers in `values` point into objects and strings this struct or the call's
// arguments keep alive, and are only followed during the call on the thread making it; a frame
// clears them after every call before it can move to another thread.
unsafe impl Send for CArgs {}

impl CArgs {
    pub fn clear(&mut self) {
        self.values.clear();
        self.codes.clear();
        self.objects.clear();
        self.strings.clear();
    }

    /// Append `v`; tensors pass as NDArray handles (kernels read their `DLTensor`).
    pub fn push(&mut self, v: &VmValue, closure: &dyn Fn(Callable) -> PackedFunc) -> Result<()> {
        let (val, code) = match v {
            VmValue::Null => (TVMValue::null(), tc::NULLPTR),
            VmValue::Int(i) => (TVMValue { v_int64: *i }, tc::INT),
            VmValue::Float(f) => (TVMValue { v_float64: *f }, tc::FLOAT),
            VmValue::DType(t) => (TVMValue { v_type: *t }, tc::DATA_TYPE),
            VmValue::Tensor(a) | VmValue::Storage(a) => {
                (TVMValue { v_handle: a.as_dltensor_ptr() as *mut c_void }, tc::NDARRAY_HANDLE)
            }
            VmValue::Str(s) => {
                let c = CString::new(s.as_bytes()).map_err(|_| Error::value("string argument contains a NUL byte"))?;
                self.strings.push(c);
                (TVMValue { v_str: self.strings.last().expect("just pushed").as_ptr() }, tc::STR)
            }
            VmValue::Vm => return Err(Error::type_error("the VM context cannot be passed to a packed function")),
            other => {
                let obj = other.clone().into_object(closure)?;
                let code = match obj.type_index() {
                    crate::runtime::object::type_table::type_index::PACKED_FUNC => tc::PACKED_FUNC_HANDLE,
                    crate::runtime::object::type_table::type_index::MODULE => tc::MODULE_HANDLE,
                    _ => tc::OBJECT_HANDLE,
                };
                let h = obj.legacy_handle();
                self.objects.push(obj);
                (TVMValue { v_handle: h }, code)
            }
        };
        self.values.push(val);
        self.codes.push(code);
        Ok(())
    }
}
