//! The VM's frame: what one call in flight owns — register files, the storage pool of this
//! frame, scratch argument arrays — over a shared [`Session`]. A frame serves one thread at a
//! time and is reused across calls (its pool and scratch keep their capacity); many frames over
//! one session run at once.

use super::builtins::{self, Context};
use super::bytecode::{Arg, Instr, Reg};
use super::session::{AllocatorKind, Callee, Session};
use super::value::{CArgs, Callable, VmValue};
use crate::abi::{DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::ShapeTupleObj;
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::header::ObjPtr;
use crate::runtime::tensor::ndarray::{shape_tuple, NDArray};
use std::borrow::Cow;
use std::sync::Arc;

/// Deepest VM-to-VM call nesting before a call is refused (the interpreter recurses).
const MAX_DEPTH: usize = 256;
/// Most buffers a frame's pool keeps track of.
const MAX_POOLED: usize = 1024;
/// Pooled buffers are sized in multiples of this.
const POOL_GRANULE: usize = 64;
/// Most arguments a reading builtin gets on the stack (more go through a vector).
const INLINE_ARGS: usize = 16;

pub struct Frame {
    pub session: Arc<Session>,
    scratch: Scratch,
}

/// What a frame reuses across its calls.
#[derive(Default)]
struct Scratch {
    pool: Vec<NDArray>,
    spare_regs: Vec<Vec<VmValue>>,
    spare_args: Vec<Vec<VmValue>>,
    spare_c: Vec<CArgs>,
    depth: usize,
    /// The session's constants, strings and shapes copied so that builtins taking them
    /// share no reference count with other threads' frames (made on first use).
    constants: Vec<VmValue>,
    /// The VM's instrument (`set_instrument`), called around every call instruction.
    instrument: Option<PackedFunc>,
    /// The shape tuple of each `AllocTensor` shortcut, made on first use.
    shapes: Vec<Option<ObjPtr<ShapeTupleObj>>>,
}

/// A frame at work: its session borrowed (a call touches no shared reference count) and its
/// scratch.
pub struct Run<'a> {
    s: &'a Arc<Session>,
    x: &'a mut Scratch,
}

impl Frame {
    pub fn new(session: Arc<Session>) -> Frame {
        Frame { session, scratch: Scratch::default() }
    }

    /// Call `f` around every call instruction from now on (`None`: stop).
    pub fn set_instrument(&mut self, f: Option<PackedFunc>) {
        self.scratch.instrument = f;
    }

    fn run_cx(&mut self) -> Run<'_> {
        Run { s: &self.session, x: &mut self.scratch }
    }

    /// Call the VM function `name` with caller values; the result as a caller value.
    pub fn call(&mut self, name: &str, args: &[Value]) -> Result<Value> {
        let f = self.session.vm_function(name)?;
        let mut vals = self.scratch.spare_args.pop().unwrap_or_default();
        for v in args {
            vals.push(VmValue::from_value(v.clone())?);
        }
        self.finish_call(f, vals)
    }

    /// Call VM function `f` (a table index) with packed-call arguments.
    pub fn call_args(&mut self, f: usize, args: Args<'_>) -> Result<Value> {
        let mut vals = self.scratch.spare_args.pop().unwrap_or_default();
        for i in 0..args.len() {
            vals.push(VmValue::from_arg(&args, i)?);
        }
        self.finish_call(f, vals)
    }

    fn finish_call(&mut self, f: usize, mut vals: Vec<VmValue>) -> Result<Value> {
        let out = self.run_cx().invoke(f, &mut vals);
        vals.clear();
        self.scratch.spare_args.push(vals);
        self.to_value(out?)
    }

    /// A register value as a caller value (closures become packed functions over this session).
    pub fn to_value(&self, v: VmValue) -> Result<Value> {
        v.into_value(&|c| closure_func(&self.session, c))
    }

    /// Run VM function `f` (a table index) on register values.
    pub fn invoke(&mut self, f: usize, mut args: Vec<VmValue>) -> Result<VmValue> {
        self.run_cx().invoke(f, &mut args)
    }

    /// Call a function value (a table entry, a closure or a packed function) on `args`.
    pub fn call_value(&mut self, c: &Callable, args: Vec<VmValue>) -> Result<VmValue> {
        self.run_cx().call_value(c, args)
    }
}

impl Run<'_> {
    /// Run VM function `f` (a table index) on register values (`args` is left empty).
    fn invoke(&mut self, f: usize, args: &mut Vec<VmValue>) -> Result<VmValue> {
        let s = self.s;
        let info = match s.exec.functions.get(f) {
            Some(info) if info.kind == super::executable::FuncKind::Vm => info,
            _ => return Err(Error::value(format!("function index {f} is not a VM function of the executable"))),
        };
        if args.len() != info.num_args {
            let names =
                if info.param_names.is_empty() { String::new() } else { format!(" ({})", info.param_names.join(", ")) };
            // RuntimeError, as apache-tvm's callers expect of a wrong argument count.
            return Err(Error::runtime(format!(
                "Invoking function {} expects {} arguments{names}, but {} arguments were provided.",
                info.name,
                info.num_args,
                args.len()
            )));
        }
        if self.x.depth >= MAX_DEPTH {
            return Err(Error::runtime(format!("VM calls nested deeper than {MAX_DEPTH} (calling `{}`)", info.name)));
        }
        let mut regs = self.x.spare_regs.pop().unwrap_or_default();
        regs.resize(info.register_file_size, VmValue::Null);
        for (r, a) in regs.iter_mut().zip(args.drain(..)) {
            *r = a;
        }
        self.x.depth += 1;
        let out = self.run(f, &mut regs);
        self.x.depth -= 1;
        regs.clear();
        self.x.spare_regs.push(regs);
        out
    }

    fn run(&mut self, f: usize, regs: &mut [VmValue]) -> Result<VmValue> {
        let s = self.s;
        let info = &s.exec.functions[f];
        let code = s.exec.code_of(info);
        let mut pc = 0usize;
        loop {
            let instr = code
                .get(pc)
                .ok_or_else(|| Error::runtime(format!("VM function `{}` ran past its last instruction", info.name)))?;
            match *instr {
                Instr::Call { dst, func, args } => {
                    let out = self.call_site(info.code_start + pc, func as usize, args, regs).map_err(|e| {
                        e.context(format!(
                            "in `{}` at instruction {pc} (`{}`)",
                            info.name, s.exec.functions[func as usize].name
                        ))
                    })?;
                    if let Reg::Index(i) = dst {
                        regs[i as usize] = out;
                    }
                    pc += 1;
                }
                Instr::Ret { result } => return Ok(std::mem::take(&mut regs[result as usize])),
                Instr::Goto { offset } => pc = (pc as i64 + offset) as usize,
                Instr::If { cond, false_offset } => {
                    if condition(&operand(s, regs, Arg::Register(cond)))? {
                        pc += 1;
                    } else {
                        pc = (pc as i64 + false_offset) as usize;
                    }
                }
            }
        }
    }

    /// The call instruction at `at` (an index of the executable's code): its shortcut, or
    /// [`Run::call_instr`] where it has none or the shortcut hands the call back.
    fn call_site(&mut self, at: usize, func: usize, range: (u32, u32), regs: &[VmValue]) -> Result<VmValue> {
        let s: &Session = self.s;
        if let (Some(sc), None) = (&s.shortcuts[at], &self.x.instrument) {
            if let Some(v) = sc.run(regs, self)? {
                return Ok(v);
            }
        }
        self.call_instr(func, range, regs)
    }

    fn call_instr(&mut self, func: usize, range: (u32, u32), regs: &[VmValue]) -> Result<VmValue> {
        let s = self.s;
        let args = s.exec.call_args(range);
        if let Some(instrument) = self.x.instrument.clone() {
            let vals = args.iter().map(|&a| operand(s, regs, a).into_owned()).collect();
            return self.call_instrumented(&instrument, func, vals);
        }
        match &s.callees[func] {
            Callee::Packed(f) => return self.call_packed_with(f, args.len(), |i| operand(s, regs, args[i])),
            Callee::Builtin(b) if !b.consumes_args() && (1..=INLINE_ARGS).contains(&args.len()) => {
                return self.call_builtin(*b, range, regs);
            }
            _ => {}
        }
        if self.x.constants.len() != s.constants.len() {
            self.x.constants = s.constants.iter().map(unshared).collect();
        }
        let mut vals = self.x.spare_args.pop().unwrap_or_default();
        let consts = &self.x.constants;
        vals.extend(args.iter().map(|&a| match a {
            Arg::Const(c) => consts[c as usize].clone(),
            a => operand(s, regs, a).into_owned(),
        }));
        let out = self.call_callee(&s.callees[func], &mut vals);
        vals.clear();
        self.x.spare_args.push(vals);
        out
    }

    /// Run builtin `b` (one that only reads its arguments) on registers, constants and the
    /// session's immediates in place: nothing is cloned, no reference count moves.
    fn call_builtin(&mut self, b: builtins::Builtin, (start, len): (u32, u32), regs: &[VmValue]) -> Result<VmValue> {
        let s: &Session = self.s;
        let (args, imms) = (s.exec.call_args((start, len)), &s.immediates[start as usize..]);
        let mut refs: [&VmValue; INLINE_ARGS] = [&imms[0]; INLINE_ARGS];
        for ((slot, &a), imm) in refs.iter_mut().zip(args).zip(imms) {
            *slot = match a {
                Arg::Register(Reg::Index(r)) => &regs[r as usize],
                Arg::Const(c) => &s.constants[c as usize],
                _ => imm,
            };
        }
        builtins::run(b, self, &refs[..args.len()])
    }

    /// A call instruction under the VM's instrument, as TVM calls it: `instrument(func, name,
    /// before_run, ret, *args)` once before (return 1 skips the call) and once after, with data
    /// types passed as strings. Builtins, which TVM also runs as packed functions, are passed as
    /// NULL with their names.
    fn call_instrumented(&mut self, instrument: &PackedFunc, func: usize, mut vals: Vec<VmValue>) -> Result<VmValue> {
        let s = self.s;
        let callee = match &s.callees[func] {
            Callee::Packed(f) => Value::Func(f.clone()),
            _ => Value::Null,
        };
        let closure = |c| closure_func(s, c);
        let mut call_args =
            vec![callee, Value::Str(s.exec.functions[func].name.clone()), Value::Bool(true), Value::Null];
        for v in &vals {
            call_args.push(match v {
                VmValue::DType(t) => Value::Str(t.to_string()),
                v => v.clone().into_value(&closure)?,
            });
        }
        if instrument.call(&call_args)?.as_int().ok() == Some(1) {
            return Ok(VmValue::Null);
        }
        let out = self.call_callee(&s.callees[func], &mut vals)?;
        call_args[2] = Value::Bool(false);
        call_args[3] = out.clone().into_value(&closure)?;
        instrument.call(&call_args)?;
        Ok(out)
    }

    /// Run a function-table entry on `args` (which it may consume).
    fn call_callee(&mut self, callee: &Callee, args: &mut Vec<VmValue>) -> Result<VmValue> {
        match callee {
            Callee::Builtin(b) => builtins::run_owned(*b, self, args),
            Callee::Packed(f) => self.call_packed(f, args),
            Callee::Bytecode(i) => self.invoke(*i, args),
        }
    }

    /// Call a packed function (a kernel) with register values in the C representation.
    fn call_packed(&mut self, f: &PackedFunc, args: &[VmValue]) -> Result<VmValue> {
        self.call_packed_with(f, args.len(), |i| Cow::Borrowed(&args[i]))
    }

    /// Call a packed function on the `n` values `arg(0..n)` yields, converted to the C
    /// representation in this frame's reused buffers.
    fn call_packed_with<'v>(
        &mut self,
        f: &PackedFunc,
        n: usize,
        arg: impl Fn(usize) -> Cow<'v, VmValue>,
    ) -> Result<VmValue> {
        if let Some(out) = call_kernel(f, n, &arg) {
            return out;
        }
        let mut c = self.x.spare_c.pop().unwrap_or_default();
        let s = self.s;
        let out = (|| {
            for i in 0..n {
                c.push(&arg(i), &|cl| closure_func(s, cl))?;
            }
            // SAFETY: every value was made by `CArgs::push` from a live value that the
            // registers, the session's constants or `c` keep alive for the call, with the
            // matching type code.
            let cargs = unsafe { Args::new(&c.values, &c.codes) };
            let mut ret = Value::Null;
            f.call_into(cargs, &mut ret)?;
            VmValue::from_value(ret)
        })();
        c.clear();
        self.x.spare_c.push(c);
        out
    }

    pub fn device(&self, index: i64) -> Result<DLDevice> {
        let devs = &self.s.devices;
        let i = if index == -1 { devs.len() as i64 - 1 } else { index };
        usize::try_from(i)
            .ok()
            .and_then(|i| devs.get(i))
            .copied()
            .ok_or_else(|| Error::value(format!("device index {index} is outside the VM's {} devices", devs.len())))
    }
}

/// Most arguments a kernel gets as tvm-ffi values on the stack.
const KERNEL_ARGS: usize = 16;

/// Call `f`, a tvm-ffi library's kernel, on plain register values (ints, floats, dtypes,
/// tensors), passed as tvm-ffi's values with no conversion through TVM 0.18's; `None` when `f`
/// is no such kernel or an argument is of another kind (the caller converts then).
fn call_kernel<'v>(f: &PackedFunc, n: usize, arg: &impl Fn(usize) -> Cow<'v, VmValue>) -> Option<Result<VmValue>> {
    use crate::abi::{ffi_type_index as ti, TVMFFIAny};
    use crate::runtime::object::type_table::type_index;
    if n > KERNEL_ARGS || !f.is_kernel() {
        return None;
    }
    let mut any = [TVMFFIAny::NONE; KERNEL_ARGS];
    for (i, slot) in any.iter_mut().enumerate().take(n) {
        // Borrowed values only: the registers and constants outlive the call.
        let Cow::Borrowed(v) = arg(i) else { return None };
        *slot = match v {
            VmValue::Int(x) => TVMFFIAny::int(ti::INT, *x),
            VmValue::Float(x) => TVMFFIAny::float(*x),
            VmValue::DType(t) => TVMFFIAny::pod(ti::DATA_TYPE, *t),
            // A view of the tensor object, as tvm-ffi passes one.
            VmValue::Tensor(a) | VmValue::Storage(a) => {
                TVMFFIAny::ptr(type_index::NDARRAY as i32, a.as_header() as *const _)
            }
            _ => return None,
        };
    }
    let out = f.call_any(&any[..n]);
    // SAFETY: the call's owned result.
    Some(out.and_then(|r| unsafe { Value::adopt_any(r) }).and_then(VmValue::from_value))
}

/// A copy of `v` sharing no reference count with it, for strings and shapes.
fn unshared(v: &VmValue) -> VmValue {
    match v {
        VmValue::Str(t) => VmValue::Str(Arc::from(&**t)),
        VmValue::Shape(d) => VmValue::Shape(Arc::from(&**d)),
        other => other.clone(),
    }
}

/// A call argument's value: registers and constants borrowed, immediates made.
fn operand<'v>(s: &'v Session, regs: &'v [VmValue], a: Arg) -> Cow<'v, VmValue> {
    match a {
        Arg::Register(Reg::Index(i)) => Cow::Borrowed(&regs[i as usize]),
        Arg::Register(Reg::Void) => Cow::Owned(VmValue::Null),
        Arg::Register(Reg::Vm) => Cow::Owned(VmValue::Vm),
        Arg::Immediate(v) => Cow::Owned(VmValue::Int(v)),
        Arg::Const(c) => Cow::Borrowed(&s.constants[c as usize]),
        Arg::Func(f) => Cow::Owned(VmValue::Func(Callable::Function(f))),
    }
}

impl Context for Run<'_> {
    /// A storage buffer of at least `bytes` on device `index` of the session (-1: the last,
    /// the host), from this frame's pool when the allocator is pooled.
    fn alloc_storage(&mut self, bytes: usize, index: i64) -> Result<NDArray> {
        let device = self.device(index)?;
        let size = bytes
            .max(1)
            .checked_next_multiple_of(POOL_GRANULE)
            .filter(|&s| s <= i64::MAX as usize)
            .ok_or_else(|| Error::value(format!("storage of {bytes} bytes")))?;
        let pooled = self.s.allocator == AllocatorKind::Pooled;
        if pooled {
            if let Some(b) =
                self.x.pool.iter().find(|b| b.ref_count() == 1 && b.nbytes() == size && b.device() == device)
            {
                // The pool held the only reference: whoever released the others is done with it.
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                return Ok(b.clone());
            }
        }
        let buf = NDArray::empty(&[size as i64], DLDataType::new(crate::abi::dtype_code::UINT, 8, 1), device)?;
        if pooled && self.x.pool.len() < MAX_POOLED {
            self.x.pool.push(buf.clone());
        }
        Ok(buf)
    }

    /// Call a function value (a table entry, a closure or a packed function) on `args`.
    fn call_value(&mut self, c: &Callable, mut args: Vec<VmValue>) -> Result<VmValue> {
        match c {
            Callable::Function(f) => {
                let s = self.s;
                self.call_callee(&s.callees[*f as usize], &mut args)
            }
            Callable::Closure(bound) => {
                args.extend(bound.1.iter().cloned());
                self.invoke(bound.0 as usize, &mut args)
            }
            Callable::Packed(f) => self.call_packed(f, &args),
        }
    }

    fn is_vm_function(&self, f: u32) -> bool {
        matches!(self.s.callees[f as usize], Callee::Bytecode(_))
    }

    fn shape_tuple(&mut self, site: u32, dims: &[i64]) -> ObjPtr<ShapeTupleObj> {
        let site = site as usize;
        if self.x.shapes.len() <= site {
            self.x.shapes.resize(site + 1, None);
        }
        self.x.shapes[site].get_or_insert_with(|| shape_tuple(dims)).clone()
    }
}

fn condition(v: &VmValue) -> Result<bool> {
    match v {
        VmValue::Int(i) => Ok(*i != 0),
        other => builtins::read_if_cond(other),
    }
}

/// A function value handed to a caller: a kernel or packed function as it is (as TVM's VM hands
/// them over: a paged KV cache calls the model's attention kernels many times a step), else a
/// packed function running it on a new frame.
pub fn closure_func(s: &Arc<Session>, c: Callable) -> PackedFunc {
    match &c {
        Callable::Packed(f) => return f.clone(),
        Callable::Function(i) => {
            if let Some(Callee::Packed(f)) = s.callees.get(*i as usize) {
                return f.clone();
            }
        }
        Callable::Closure(_) => {}
    }
    let s = s.clone();
    PackedFunc::from_typed(move |args| {
        let mut frame = Frame::new(s.clone());
        let vals = (0..args.len()).map(|i| VmValue::from_value(args.to_value(i)?)).collect::<Result<Vec<_>>>()?;
        let out = frame.call_value(&c, vals)?;
        frame.to_value(out)
    })
}
