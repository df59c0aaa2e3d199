//! The `vm.builtin.*` functions the Relax compilers of TVM 0.18 and of the tvm-ffi releases emit,
//! run natively on register values (no packed-call conversion): checks of the arguments, the
//! shape heap, storage and tensor allocation, tuples, closures and the dynamic-shape calls.
//!
//! Shape codes (TVM's `relax_vm/builtin.h`): `match_shape` per dimension 0 assert equal to the
//! immediate, 1 store into the heap slot, 2 nothing, 3 assert equal to the heap slot;
//! `make_shape` / `make_prim_value` 0 the immediate, 1 the heap slot.

use super::value::{Callable, VmValue};
use crate::abi::{device_type, dtype_code, DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::ShapeTupleObj;
use crate::runtime::dlpack::dtype::num_elements;
use crate::runtime::object::header::ObjPtr;
use crate::runtime::tensor::ndarray::NDArray;

macro_rules! builtins {
    ($($variant:ident = $name:literal,)*) => {
        /// A VM builtin, resolved from its name once per session.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Builtin { $($variant,)* }

        impl Builtin {
            pub fn from_name(name: &str) -> Option<Builtin> {
                match name { $($name => Some(Builtin::$variant),)* _ => None }
            }
            pub fn name(self) -> &'static str {
                match self { $(Builtin::$variant => $name,)* }
            }
        }
    };
}

builtins! {
    AllocShapeHeap = "vm.builtin.alloc_shape_heap",
    MatchShape = "vm.builtin.match_shape",
    MatchPrimValue = "vm.builtin.match_prim_value",
    MakeShape = "vm.builtin.make_shape",
    MakePrimValue = "vm.builtin.make_prim_value",
    CheckTensorInfo = "vm.builtin.check_tensor_info",
    CheckShapeInfo = "vm.builtin.check_shape_info",
    CheckTupleInfo = "vm.builtin.check_tuple_info",
    CheckPrimValueInfo = "vm.builtin.check_prim_value_info",
    CheckFuncInfo = "vm.builtin.check_func_info",
    AllocStorage = "vm.builtin.alloc_storage",
    AllocTensor = "vm.builtin.alloc_tensor",
    MakeClosure = "vm.builtin.make_closure",
    InvokeClosure = "vm.builtin.invoke_closure",
    CallTirDyn = "vm.builtin.call_tir_dyn",
    ShapeOf = "vm.builtin.shape_of",
    Copy = "vm.builtin.copy",
    Reshape = "vm.builtin.reshape",
    NullValue = "vm.builtin.null_value",
    ReadIfCond = "vm.builtin.read_if_cond",
    TupleGetItem = "vm.builtin.tuple_getitem",
    MakeTuple = "vm.builtin.make_tuple",
}

/// What the builtins need from the frame running them.
pub trait Context {
    /// A storage buffer of at least `bytes` on the VM's device `index` (-1: the host).
    fn alloc_storage(&mut self, bytes: usize, index: i64) -> Result<NDArray>;
    /// Call a function value on `args`.
    fn call_value(&mut self, c: &Callable, args: Vec<VmValue>) -> Result<VmValue>;
    /// Whether function-table entry `f` is a VM function.
    fn is_vm_function(&self, f: u32) -> bool;
    /// The shape tuple of `AllocTensor` shortcut `site` (`dims`), made once per frame and
    /// shared by the tensors it allocates.
    fn shape_tuple(&mut self, site: u32, dims: &[i64]) -> ObjPtr<ShapeTupleObj>;
}

impl Builtin {
    /// Whether the builtin takes ownership of its arguments (moves them into its result or a
    /// call); the others only read them and run on borrowed registers ([`run`]).
    pub fn consumes_args(self) -> bool {
        matches!(self, Builtin::InvokeClosure | Builtin::CallTirDyn | Builtin::Copy | Builtin::MakeTuple)
    }
}

/// Run builtin `b` on `args`, which it may consume.
pub fn run_owned(b: Builtin, frame: &mut impl Context, args: &mut Vec<VmValue>) -> Result<VmValue> {
    use Builtin::*;
    match b {
        InvokeClosure => {
            let f = func(&args.iter().collect::<Vec<_>>(), 1)?;
            let rest = args.drain(..).skip(2).collect();
            frame.call_value(&f, rest)
        }
        CallTirDyn => call_tir_dyn(frame, args),
        Copy => {
            want(b, &args.iter().collect::<Vec<_>>(), 1)?;
            Ok(args.swap_remove(0))
        }
        MakeTuple => Ok(VmValue::Tuple(std::mem::take(args).into())),
        _ => run(b, frame, &args.iter().collect::<Vec<_>>()),
    }
}

/// Run builtin `b`, one that does not consume its arguments, on borrowed ones.
pub fn run(b: Builtin, frame: &mut impl Context, a: &[&VmValue]) -> Result<VmValue> {
    use Builtin::*;
    match b {
        AllocShapeHeap => {
            want(b, a, 2)?;
            let n = int(a, 1)?;
            let bytes = usize::try_from(n).ok().and_then(|n| n.checked_mul(8));
            let bytes = bytes.ok_or_else(|| Error::value(format!("shape heap of {n} slots")))?;
            let buf = frame.alloc_storage(bytes, -1)?;
            Ok(VmValue::Tensor(buf.create_view(&[n], DLDataType::INT64)?))
        }
        MatchShape => match_shape(a).map(|_| VmValue::Null),
        MatchPrimValue => {
            want(b, a, 5)?;
            let ctx = err_ctx(a, 4)?;
            let what = || format!("{ctx} match_cast error, PrimValue");
            match_dim(&heap(a, 1)?, int(a, 2)?, int(a, 3)?, int(a, 0)?, what).map(|_| VmValue::Null)
        }
        MakeShape => make_shape(a),
        MakePrimValue => {
            want(b, a, 3)?;
            load_dim(&heap(a, 0)?, int(a, 1)?, int(a, 2)?).map(VmValue::Int)
        }
        CheckTensorInfo => check_tensor_info(a).map(|_| VmValue::Null),
        CheckShapeInfo => check_shape_info(a).map(|_| VmValue::Null),
        CheckTupleInfo => check_tuple_info(a).map(|_| VmValue::Null),
        CheckPrimValueInfo => check_prim_value_info(a).map(|_| VmValue::Null),
        CheckFuncInfo => {
            want(b, a, 2)?;
            match a[0] {
                VmValue::Func(_) => Ok(VmValue::Null),
                v => Err(Error::type_error(format!("{} expect a Function but get {}", err_ctx(a, 1)?, v.kind()))),
            }
        }
        AllocStorage => alloc_storage(frame, a),
        AllocTensor => alloc_tensor(a),
        MakeClosure => make_closure(frame, a),
        ShapeOf => Ok(VmValue::Shape(tensor(a, 0)?.shape().into())),
        Reshape => {
            want(b, a, 2)?;
            let t = tensor(a, 0)?;
            Ok(VmValue::Tensor(t.create_view(shape(a, 1)?, t.dtype())?))
        }
        NullValue => want(b, a, 0).map(|_| VmValue::Null),
        ReadIfCond => {
            want(b, a, 1)?;
            read_if_cond(a[0]).map(|c| VmValue::Int(c as i64))
        }
        TupleGetItem => {
            want(b, a, 2)?;
            let (items, i) = (tuple(a, 0)?, int(a, 1)?);
            usize::try_from(i).ok().and_then(|i| items.get(i)).cloned().ok_or_else(|| {
                Error::index(format!("tuple index {i} out of range for a tuple of {} elements", items.len()))
            })
        }
        InvokeClosure | CallTirDyn | Copy | MakeTuple => {
            Err(Error::internal(format!("{} consumes its arguments: run it with run_owned", b.name())))
        }
    }
}

fn want(b: Builtin, a: &[&VmValue], n: usize) -> Result<()> {
    if a.len() != n {
        return Err(Error::value(format!("{} expects {n} arguments, got {}", b.name(), a.len())));
    }
    Ok(())
}

fn get<'a>(a: &[&'a VmValue], i: usize) -> Result<&'a VmValue> {
    a.get(i).copied().ok_or_else(|| Error::index(format!("builtin argument {i} requested but only {} given", a.len())))
}

fn mismatch(i: usize, want: &str, got: &VmValue) -> Error {
    Error::type_error(format!("builtin argument {i}: expected {want}, got {}", got.kind()))
}

fn int(a: &[&VmValue], i: usize) -> Result<i64> {
    match get(a, i)? {
        VmValue::Int(v) => Ok(*v),
        v => Err(mismatch(i, "int", v)),
    }
}

fn tensor<'a>(a: &[&'a VmValue], i: usize) -> Result<&'a NDArray> {
    match get(a, i)? {
        VmValue::Tensor(t) => Ok(t),
        v => Err(mismatch(i, "Tensor", v)),
    }
}

fn shape<'a>(a: &[&'a VmValue], i: usize) -> Result<&'a [i64]> {
    match get(a, i)? {
        VmValue::Shape(s) => Ok(s),
        v => Err(mismatch(i, "Shape", v)),
    }
}

fn tuple<'a>(a: &[&'a VmValue], i: usize) -> Result<&'a [VmValue]> {
    match get(a, i)? {
        VmValue::Tuple(t) => Ok(t),
        v => Err(mismatch(i, "Tuple", v)),
    }
}

fn dtype(a: &[&VmValue], i: usize) -> Result<DLDataType> {
    match get(a, i)? {
        VmValue::DType(t) => Ok(*t),
        VmValue::Str(s) => DLDataType::parse(s),
        v => Err(mismatch(i, "DataType", v)),
    }
}

fn func(a: &[&VmValue], i: usize) -> Result<Callable> {
    match get(a, i)? {
        VmValue::Func(f) => Ok(f.clone()),
        v => Err(mismatch(i, "Function", v)),
    }
}

/// The error context string a check carries (may be absent).
fn err_ctx<'a>(a: &[&'a VmValue], i: usize) -> Result<&'a str> {
    match get(a, i)? {
        VmValue::Str(s) => Ok(s),
        VmValue::Null => Ok(""),
        v => Err(mismatch(i, "String", v)),
    }
}

/// The shape heap: an int64 CPU tensor (or none, for functions without symbolic shapes).
pub(super) struct Heap<'a>(Option<&'a NDArray>);

pub(super) fn heap<'a>(a: &[&'a VmValue], i: usize) -> Result<Heap<'a>> {
    match get(a, i)? {
        VmValue::Null => Ok(Heap(None)),
        VmValue::Tensor(t)
            if t.dtype() == DLDataType::INT64
                && t.strides().is_none()
                && t.dl_tensor.byte_offset == 0
                && t.device().device_type == 1 =>
        {
            Ok(Heap(Some(t)))
        }
        v => Err(mismatch(i, "the shape heap (an int64 CPU tensor)", v)),
    }
}

impl Heap<'_> {
    /// Pointer to slot `slot`, checked against the heap's length.
    fn slot(&self, slot: i64) -> Result<*mut i64> {
        let t = self.0.as_ref().ok_or_else(|| Error::value("shape heap slot used but the function has no heap"))?;
        let len = t.shape().first().copied().unwrap_or(0);
        if t.shape().len() != 1 || !(0..len).contains(&slot) {
            return Err(Error::index(format!("shape heap slot {slot} outside the heap of {len}")));
        }
        // SAFETY: a compact int64 CPU tensor of `len` elements (checked in `heap` and above).
        Ok(unsafe { (t.data_ptr() as *mut i64).add(slot as usize) })
    }
    fn get(&self, slot: i64) -> Result<i64> {
        // SAFETY: an in-bounds slot of a live int64 tensor (`slot` checks); only this call's
        // frame uses the heap.
        Ok(unsafe { self.slot(slot)?.read() })
    }
    fn set(&self, slot: i64, v: i64) -> Result<()> {
        // SAFETY: as in `get`.
        unsafe { self.slot(slot)?.write(v) };
        Ok(())
    }
}

/// One `match_shape` / `match_prim_value` step: `code` against `value` with operand `r`;
/// `what` names the checked value (built only for an error).
pub(super) fn match_dim(heap: &Heap, code: i64, r: i64, value: i64, what: impl Fn() -> String) -> Result<()> {
    match code {
        // RuntimeError, as TVM raises it for a failed match_cast.
        0 if value != r => Err(Error::runtime(format!("{} is {value} but {r} is required", what()))),
        1 => heap.set(r, value),
        3 if value != heap.get(r)? => {
            Err(Error::runtime(format!("{} is {value} but an earlier match bound it to {}", what(), heap.get(r)?)))
        }
        0 | 2 | 3 => Ok(()),
        c => Err(Error::value(format!("unknown match_shape code {c}"))),
    }
}

fn load_dim(heap: &Heap, code: i64, r: i64) -> Result<i64> {
    match code {
        0 => Ok(r),
        1 => heap.get(r),
        c => Err(Error::value(format!("unknown make_shape code {c}"))),
    }
}

/// Whether `len` arguments are `fixed` others plus `n` (code, operand) pairs.
fn pairs_fit(len: usize, fixed: usize, n: usize) -> bool {
    n.checked_mul(2).and_then(|p| p.checked_add(fixed)) == Some(len)
}

/// `match_shape(value, heap, ndim, (code, operand) * ndim, err_ctx)`.
fn match_shape(a: &[&VmValue]) -> Result<()> {
    let dims: &[i64] = match get(a, 0)? {
        VmValue::Tensor(t) => t.shape(),
        VmValue::Shape(s) => s,
        v => return Err(mismatch(0, "Tensor or Shape", v)),
    };
    let (heap, n) = (heap(a, 1)?, int(a, 2)?);
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| pairs_fit(a.len(), 4, n))
        .ok_or_else(|| Error::value(format!("vm.builtin.match_shape: {} arguments for {n} dimensions", a.len())))?;
    let ctx = err_ctx(a, 3 + 2 * n)?;
    if dims.len() != n {
        return Err(Error::value(format!(
            "{ctx} match_cast shape size mismatch: expected {n} dimensions, got shape {dims:?}"
        )));
    }
    for (i, &d) in dims.iter().enumerate() {
        let what = || format!("{ctx} match_cast error, shape[{i}]");
        match_dim(&heap, int(a, 3 + 2 * i)?, int(a, 4 + 2 * i)?, d, what)?;
    }
    Ok(())
}

/// `make_shape(heap, ndim, (code, operand) * ndim)`.
fn make_shape(a: &[&VmValue]) -> Result<VmValue> {
    let (heap, n) = (heap(a, 0)?, int(a, 1)?);
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| pairs_fit(a.len(), 2, n))
        .ok_or_else(|| Error::value(format!("vm.builtin.make_shape: {} arguments for {n} dimensions", a.len())))?;
    let dims = (0..n).map(|i| load_dim(&heap, int(a, 2 + 2 * i)?, int(a, 3 + 2 * i)?)).collect::<Result<Vec<_>>>()?;
    Ok(VmValue::Shape(dims.into()))
}

/// `check_tensor_info(arg, ndim, [dtype,] err_ctx)`.
fn check_tensor_info(a: &[&VmValue]) -> Result<()> {
    let (want_dtype, ctx) = match a.len() {
        3 => (None, err_ctx(a, 2)?),
        4 => (
            match get(a, 2)? {
                VmValue::Null => None,
                _ => Some(dtype(a, 2)?),
            },
            err_ctx(a, 3)?,
        ),
        n => return Err(Error::value(format!("vm.builtin.check_tensor_info expects 3 or 4 arguments, got {n}"))),
    };
    let t = match a[0] {
        VmValue::Tensor(t) => t,
        v => return Err(Error::type_error(format!("{ctx} expect a Tensor but get {}", v.kind()))),
    };
    let ndim = int(a, 1)?;
    if ndim != -1 && t.shape().len() as i64 != ndim {
        return Err(Error::value(format!(
            "{ctx} expect Tensor with ndim {ndim} but get {} (shape {:?})",
            t.shape().len(),
            t.shape()
        )));
    }
    match want_dtype {
        Some(d) if d != t.dtype() => {
            Err(Error::value(format!("{ctx} expect Tensor with dtype {d} but get {}", t.dtype())))
        }
        _ => Ok(()),
    }
}

fn check_shape_info(a: &[&VmValue]) -> Result<()> {
    let ctx = err_ctx(a, 2)?;
    let s = match get(a, 0)? {
        VmValue::Shape(s) => s,
        v => return Err(Error::type_error(format!("{ctx} expect a Shape but get {}", v.kind()))),
    };
    let ndim = int(a, 1)?;
    if ndim != -1 && s.len() as i64 != ndim {
        return Err(Error::value(format!("{ctx} expect Shape with ndim {ndim} but get {}", s.len())));
    }
    Ok(())
}

fn check_tuple_info(a: &[&VmValue]) -> Result<()> {
    let ctx = err_ctx(a, 2)?;
    let t = match get(a, 0)? {
        VmValue::Tuple(t) => t,
        v => return Err(Error::type_error(format!("{ctx} expect a Tuple but get {}", v.kind()))),
    };
    let n = int(a, 1)?;
    if t.len() as i64 != n {
        return Err(Error::value(format!(
            "{ctx} expect a Tuple with {n} elements, but get a Tuple with {} elements.",
            t.len()
        )));
    }
    Ok(())
}

fn check_prim_value_info(a: &[&VmValue]) -> Result<()> {
    let ctx = err_ctx(a, 2)?;
    let d = dtype(a, 1)?;
    let ok = match (get(a, 0)?, d.code) {
        (VmValue::Int(_), _) if integer_or_bool(d) => true,
        (VmValue::Int(_) | VmValue::Float(_), dtype_code::FLOAT) | (VmValue::Null, dtype_code::OPAQUE_HANDLE) => true,
        _ => false,
    };
    if !ok {
        return Err(Error::type_error(format!("{ctx}, expected dtype {d}, but received {}", get(a, 0)?.kind())));
    }
    Ok(())
}

/// `alloc_storage(vm, size shape, device index, dtype hint, memory scope)`.
fn alloc_storage(frame: &mut impl Context, a: &[&VmValue]) -> Result<VmValue> {
    if a.len() != 5 {
        return Err(Error::value(format!("vm.builtin.alloc_storage expects 5 arguments, got {}", a.len())));
    }
    let (dims, index, hint) = (shape(a, 1)?, int(a, 2)?, dtype(a, 3)?);
    match get(a, 4)? {
        VmValue::Str(s) if s.is_empty() || &**s == "global" => {}
        v => return Err(Error::unsupported(format!("storage in memory scope {:?} (only \"global\")", v.kind()))),
    }
    let elem = (hint.bits as usize * hint.lanes as usize).div_ceil(8);
    let bytes = num_elements(dims)?
        .checked_mul(elem)
        .ok_or_else(|| Error::value(format!("storage of shape {dims:?} and dtype {hint} overflows")))?;
    Ok(VmValue::Storage(frame.alloc_storage(bytes, index)?))
}

/// `alloc_tensor(storage, offset, shape, dtype[, scope])`: a view of the storage.
fn alloc_tensor(a: &[&VmValue]) -> Result<VmValue> {
    if !(4..=5).contains(&a.len()) {
        return Err(Error::value(format!("vm.builtin.alloc_tensor expects 4 or 5 arguments, got {}", a.len())));
    }
    let storage = match get(a, 0)? {
        VmValue::Storage(s) => s,
        v => return Err(mismatch(0, "Storage", v)),
    };
    let offset = usize::try_from(int(a, 1)?).map_err(|_| Error::value("negative tensor offset in storage"))?;
    Ok(VmValue::Tensor(storage.create_view_at(offset, shape(a, 2)?, dtype(a, 3)?)?))
}

fn make_closure(frame: &impl Context, a: &[&VmValue]) -> Result<VmValue> {
    let bound: Vec<VmValue> = a.iter().skip(1).map(|&v| v.clone()).collect();
    match func(a, 0)? {
        Callable::Function(f) if frame.is_vm_function(f) => Ok(VmValue::Func(Callable::Closure((f, bound).into()))),
        Callable::Closure(c) => {
            let all = bound.into_iter().chain(c.1.iter().cloned()).collect();
            Ok(VmValue::Func(Callable::Closure((c.0, all).into())))
        }
        _ => Err(Error::type_error("vm.builtin.make_closure expects a VM function")),
    }
}

/// `call_tir_dyn(kernel, tensors..., shape)`: the kernel with the shape's values appended.
fn call_tir_dyn(frame: &mut impl Context, args: &mut Vec<VmValue>) -> Result<VmValue> {
    if args.len() < 2 {
        return Err(Error::value("vm.builtin.call_tir_dyn expects a kernel and a shape"));
    }
    let refs: Vec<&VmValue> = args.iter().collect();
    let f = func(&refs, 0)?;
    let dims = shape(&refs, refs.len() - 1)?.to_vec();
    args.pop();
    let call: Vec<VmValue> = args.drain(1..).chain(dims.iter().map(|&d| VmValue::Int(d))).collect();
    frame.call_value(&f, call)
}

/// The truth of an `If` condition: an int, or the first element of an integer tensor.
/// An integer type, or a bool: TVM 0.18's (`uint1`) or DLPack 1.x's (code 6, 8 bits), which the
/// tvm-ffi releases' executables and kernels use. No condition or integer value is ever one of
/// TVM 0.18's 8-bit e4m3 floats, which share that code, so it reads as a bool here.
fn integer_or_bool(d: DLDataType) -> bool {
    matches!(d.code, dtype_code::INT | dtype_code::UINT) || (d.code == dtype_code::DLPACK1_BOOL && d.bits == 8)
}

pub fn read_if_cond(v: &VmValue) -> Result<bool> {
    match v {
        VmValue::Int(i) => Ok(*i != 0),
        // A condition on a device is read from a host copy, as TVM's VM does.
        VmValue::Tensor(t) if t.device().device_type != device_type::CPU => {
            read_if_cond(&VmValue::Tensor(t.copy_to(DLDevice::cpu(0))?))
        }
        VmValue::Tensor(t)
            if t.device().device_type == 1 && t.dl_tensor.byte_offset == 0 && integer_or_bool(t.dtype()) =>
        {
            let bytes = t.dtype().bits.div_ceil(8) as usize;
            if t.nbytes() < bytes || !matches!(bytes, 1 | 2 | 4 | 8) {
                return Err(Error::value(format!("condition tensor of dtype {} cannot be read", t.dtype())));
            }
            let mut b = [0u8; 8];
            // SAFETY: a live CPU tensor holding at least `bytes` bytes (checked above).
            unsafe { std::ptr::copy_nonoverlapping(t.data_ptr() as *const u8, b.as_mut_ptr(), bytes) };
            Ok(b.iter().any(|&x| x != 0))
        }
        v => Err(Error::type_error(format!("an If condition must be an int or an integer tensor, got {}", v.kind()))),
    }
}
