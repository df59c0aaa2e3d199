//! The VM's frame: what one call in flight owns — register files, the storage pool of this
//! frame, scratch argument arrays — over a shared [`Session`]. A frame serves one thread at a
//! time and is reused across calls (its pool and scratch keep their capacity); many frames over
//! one session run at once.

use super::builtins::{self, Context};
use super::bytecode::{Arg, Instr, Reg};
use super::session::{AllocatorKind, Callee, Session};
use super::value::{CArgs, Callable, VmValue};
use crate::abi::{DLDataType, DLDevice};
use crate::runtime::error::{Error, Result};
use crate::runtime::ndarray::NDArray;
use crate::runtime::packed::{Args, PackedFunc, Value};
use std::sync::Arc;

/// Deepest VM-to-VM call nesting before a call is refused (the interpreter recurses).
const MAX_DEPTH: usize = 256;
/// Most buffers a frame's pool keeps track of.
const MAX_POOLED: usize = 1024;
/// Pooled buffers are sized in multiples of this.
const POOL_GRANULE: usize = 64;

pub struct Frame {
    pub session: Arc<Session>,
    pool: Vec<NDArray>,
    spare_regs: Vec<Vec<VmValue>>,
    spare_args: Vec<Vec<VmValue>>,
    spare_c: Vec<CArgs>,
    depth: usize,
}

impl Frame {
    pub fn new(session: Arc<Session>) -> Frame {
        Frame {
            session,
            pool: Vec::new(),
            spare_regs: Vec::new(),
            spare_args: Vec::new(),
            spare_c: Vec::new(),
            depth: 0,
        }
    }

    /// Call the VM function `name` with caller values; the result as a caller value.
    pub fn call(&mut self, name: &str, args: &[Value]) -> Result<Value> {
        let f = self.session.vm_function(name)?;
        let args = args.iter().map(|v| VmValue::from_value(v.clone())).collect::<Result<Vec<_>>>()?;
        let out = self.invoke(f, args)?;
        self.to_value(out)
    }

    /// A register value as a caller value (closures become packed functions over this session).
    pub fn to_value(&self, v: VmValue) -> Result<Value> {
        let s = self.session.clone();
        v.into_value(&move |c| closure_func(&s, c))
    }

    /// Run VM function `f` (a table index) on register values.
    pub fn invoke(&mut self, f: usize, args: Vec<VmValue>) -> Result<VmValue> {
        let session = self.session.clone();
        let info = match session.exec.functions.get(f) {
            Some(info) if info.kind == super::executable::FuncKind::Vm => info,
            _ => return Err(Error::value(format!("function index {f} is not a VM function of the executable"))),
        };
        if args.len() != info.num_args {
            let names =
                if info.param_names.is_empty() { String::new() } else { format!(" ({})", info.param_names.join(", ")) };
            return Err(Error::value(format!(
                "Invoking function {} expects {} arguments{names}, but {} arguments were provided.",
                info.name,
                info.num_args,
                args.len()
            )));
        }
        if self.depth >= MAX_DEPTH {
            return Err(Error::runtime(format!("VM calls nested deeper than {MAX_DEPTH} (calling `{}`)", info.name)));
        }
        let mut regs = self.spare_regs.pop().unwrap_or_default();
        regs.resize(info.register_file_size, VmValue::Null);
        for (r, a) in regs.iter_mut().zip(args) {
            *r = a;
        }
        self.depth += 1;
        let out = self.run(&session, f, &mut regs);
        self.depth -= 1;
        regs.clear();
        self.spare_regs.push(regs);
        out
    }

    fn run(&mut self, s: &Session, f: usize, regs: &mut [VmValue]) -> Result<VmValue> {
        let info = &s.exec.functions[f];
        let code = s.exec.code_of(info);
        let mut pc = 0usize;
        loop {
            let instr = code
                .get(pc)
                .ok_or_else(|| Error::runtime(format!("VM function `{}` ran past its last instruction", info.name)))?;
            match *instr {
                Instr::Call { dst, func, args } => {
                    let out = self.call_instr(s, func as usize, s.exec.call_args(args), regs).map_err(|e| {
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
                    if condition(&read(regs, cond))? {
                        pc += 1;
                    } else {
                        pc = (pc as i64 + false_offset) as usize;
                    }
                }
            }
        }
    }

    fn call_instr(&mut self, s: &Session, func: usize, args: &[Arg], regs: &[VmValue]) -> Result<VmValue> {
        let mut vals = self.spare_args.pop().unwrap_or_default();
        vals.extend(args.iter().map(|a| match *a {
            Arg::Register(r) => read(regs, r),
            Arg::Immediate(v) => VmValue::Int(v),
            Arg::Const(c) => s.constants[c as usize].clone(),
            Arg::Func(f) => VmValue::Func(Callable::Function(f)),
        }));
        let out = self.call_callee(&s.callees[func], &mut vals);
        vals.clear();
        self.spare_args.push(vals);
        out
    }

    /// Run a function-table entry on `args` (which it may consume).
    fn call_callee(&mut self, callee: &Callee, args: &mut Vec<VmValue>) -> Result<VmValue> {
        match callee {
            Callee::Builtin(b) => builtins::run(*b, self, args),
            Callee::Packed(f) => self.call_packed(f, args),
            Callee::Bytecode(i) => self.invoke(*i, std::mem::take(args)),
        }
    }

    /// Call a packed function (a kernel) with register values in the C representation.
    pub fn call_packed(&mut self, f: &PackedFunc, args: &[VmValue]) -> Result<VmValue> {
        let mut c = self.spare_c.pop().unwrap_or_default();
        let s = self.session.clone();
        let out = (|| {
            for a in args {
                c.push(a, &|cl| closure_func(&s, cl))?;
            }
            // SAFETY: every value was made by `CArgs::push` from a live value that `args` or `c`
            // keeps alive for the call, with the matching type code.
            let cargs = unsafe { Args::new(&c.values, &c.codes) };
            let mut ret = Value::Null;
            f.call_into(cargs, &mut ret)?;
            VmValue::from_value(ret)
        })();
        c.clear();
        self.spare_c.push(c);
        out
    }

    pub fn device(&self, index: i64) -> Result<DLDevice> {
        let devs = &self.session.devices;
        let i = if index == -1 { devs.len() as i64 - 1 } else { index };
        usize::try_from(i)
            .ok()
            .and_then(|i| devs.get(i))
            .copied()
            .ok_or_else(|| Error::value(format!("device index {index} is outside the VM's {} devices", devs.len())))
    }
}

impl Context for Frame {
    /// A storage buffer of at least `bytes` on device `index` of the session (-1: the last,
    /// the host), from this frame's pool when the allocator is pooled.
    fn alloc_storage(&mut self, bytes: usize, index: i64) -> Result<NDArray> {
        let device = self.device(index)?;
        let size = bytes
            .max(1)
            .checked_next_multiple_of(POOL_GRANULE)
            .filter(|&s| s <= i64::MAX as usize)
            .ok_or_else(|| Error::value(format!("storage of {bytes} bytes")))?;
        let pooled = self.session.allocator == AllocatorKind::Pooled;
        if pooled {
            if let Some(b) = self.pool.iter().find(|b| b.ref_count() == 1 && b.nbytes() == size && b.device() == device)
            {
                // The pool held the only reference: whoever released the others is done with it.
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                return Ok(b.clone());
            }
        }
        let buf = NDArray::empty(&[size as i64], DLDataType::new(crate::abi::dtype_code::UINT, 8, 1), device)?;
        if pooled && self.pool.len() < MAX_POOLED {
            self.pool.push(buf.clone());
        }
        Ok(buf)
    }

    /// Call a function value (a table entry, a closure or a packed function) on `args`.
    fn call_value(&mut self, c: &Callable, mut args: Vec<VmValue>) -> Result<VmValue> {
        match c {
            Callable::Function(f) => {
                let callee = self.session.callees[*f as usize].clone();
                self.call_callee(&callee, &mut args)
            }
            Callable::Closure(bound) => {
                args.extend(bound.1.iter().cloned());
                self.invoke(bound.0 as usize, args)
            }
            Callable::Packed(f) => self.call_packed(f, &args),
        }
    }

    fn is_vm_function(&self, f: u32) -> bool {
        matches!(self.session.callees[f as usize], Callee::Bytecode(_))
    }
}

fn read(regs: &[VmValue], r: Reg) -> VmValue {
    match r {
        Reg::Index(i) => regs[i as usize].clone(),
        Reg::Void => VmValue::Null,
        Reg::Vm => VmValue::Vm,
    }
}

fn condition(v: &VmValue) -> Result<bool> {
    match v {
        VmValue::Int(i) => Ok(*i != 0),
        other => builtins::read_if_cond(other),
    }
}

/// A function value handed to a caller: a packed function running it on a new frame.
pub fn closure_func(s: &Arc<Session>, c: Callable) -> PackedFunc {
    let s = s.clone();
    PackedFunc::from_typed(move |args| {
        let mut frame = Frame::new(s.clone());
        let vals = (0..args.len()).map(|i| VmValue::from_value(args.to_value(i)?)).collect::<Result<Vec<_>>>()?;
        let out = frame.call_value(&c, vals)?;
        frame.to_value(out)
    })
}
