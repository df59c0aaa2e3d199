//! Call sites decoded once per session: the builtins a compiled function runs on every call
//! (argument checks, shape matching, storage and tensor allocation, null values) whose other
//! arguments the executable fixes (immediates and constants), turned into what they check or
//! allocate. A call site with a shortcut runs it; a shortcut whose check fails, or whose
//! register does not hold what it expects, hands the call back to the builtin, which gives the
//! error with its message. A shortcut decides nothing its builtin would not.

use super::builtins::{self, Builtin, Context};
use super::bytecode::{Arg, Reg};
use super::value::VmValue;
use crate::abi::DLDataType;
use crate::runtime::base::error::Result;
use crate::runtime::dlpack::dtype::num_elements;

/// A builtin call with its fixed arguments decoded.
pub enum Shortcut {
    /// `check_tensor_info(%reg, ndim, [dtype,] err_ctx)`.
    CheckTensor { reg: u32, ndim: i64, dtype: Option<DLDataType> },
    /// `match_shape(%reg, heap, ndim, (code, operand) * ndim, err_ctx)`.
    MatchShape { reg: u32, heap: Option<u32>, dims: Box<[(i64, i64)]> },
    /// `alloc_storage(%vm, shape, device, dtype, scope)` with a constant shape: its bytes.
    AllocStorage { bytes: usize, device: i64 },
    /// `alloc_tensor(%storage, offset, shape, dtype)` with a constant shape and dtype; `site`
    /// numbers the session's shortcuts of this kind (a frame keeps one shape tuple for each).
    AllocTensor { storage: u32, offset: usize, shape: Box<[i64]>, dtype: DLDataType, site: u32 },
    /// `null_value()`.
    Null,
}

impl Shortcut {
    /// The shortcut for a call of `b` on `args`, where one applies (`constants`: the session's;
    /// `sites`: how many `AllocTensor` shortcuts the session has so far, counted on).
    pub fn new(b: Builtin, args: &[Arg], constants: &[VmValue], sites: &mut u32) -> Option<Shortcut> {
        let fixed = |i: usize| args.get(i).map(|&arg| Fixed { arg, constants });
        // The checks' error context must be what the builtin accepts, as it reads it first.
        let ctx_ok = || args.last().is_some_and(|&arg| Fixed { arg, constants }.is_context());
        match (b, args.len()) {
            (Builtin::CheckTensorInfo, 3 | 4) if ctx_ok() => Some(Shortcut::CheckTensor {
                reg: register(args[0])?,
                ndim: fixed(1)?.int()?,
                dtype: if args.len() == 4 { fixed(2)?.dtype_or_none()? } else { None },
            }),
            (Builtin::MatchShape, n) if n >= 4 && ctx_ok() => {
                let ndim = usize::try_from(fixed(2)?.int()?).ok().filter(|&d| 4 + 2 * d == n)?;
                let dims = (0..ndim).map(|i| Some((fixed(3 + 2 * i)?.int()?, fixed(4 + 2 * i)?.int()?)));
                let heap = match args[1] {
                    Arg::Register(Reg::Void) => None,
                    a => Some(register(a)?),
                };
                Some(Shortcut::MatchShape { reg: register(args[0])?, heap, dims: dims.collect::<Option<_>>()? })
            }
            (Builtin::AllocStorage, 5) if args[0] == Arg::Register(Reg::Vm) => {
                let (dims, hint) = (fixed(1)?.shape()?, fixed(3)?.dtype_or_none()??);
                let global = matches!(fixed(4)?.value()?, VmValue::Str(s) if s.is_empty() || &**s == "global");
                let elem = (hint.bits as usize * hint.lanes as usize).div_ceil(8);
                let bytes = num_elements(dims).ok()?.checked_mul(elem)?;
                global.then_some(Shortcut::AllocStorage { bytes, device: fixed(2)?.int()? })
            }
            (Builtin::AllocTensor, 4) => {
                let sc = Shortcut::AllocTensor {
                    storage: register(args[0])?,
                    offset: usize::try_from(fixed(1)?.int()?).ok()?,
                    shape: fixed(2)?.shape()?.into(),
                    dtype: fixed(3)?.dtype_or_none()??,
                    site: *sites,
                };
                *sites += 1;
                Some(sc)
            }
            (Builtin::NullValue, 0) => Some(Shortcut::Null),
            _ => None,
        }
    }

    /// Run the call: `Some` its result, `None` when the builtin must run it instead (a check
    /// failed, or a register holds something else); errors only where the builtin would fail
    /// the same way (an allocation).
    pub fn run(&self, regs: &[VmValue], cx: &mut impl Context) -> Result<Option<VmValue>> {
        Ok(match self {
            Shortcut::CheckTensor { reg, ndim, dtype } => match &regs[*reg as usize] {
                VmValue::Tensor(t)
                    if (*ndim == -1 || t.shape().len() as i64 == *ndim) && dtype.is_none_or(|d| d == t.dtype()) =>
                {
                    Some(VmValue::Null)
                }
                _ => None,
            },
            Shortcut::MatchShape { reg, heap, dims } => match_shape(regs, *reg, *heap, dims).then_some(VmValue::Null),
            Shortcut::AllocStorage { bytes, device } => Some(VmValue::Storage(cx.alloc_storage(*bytes, *device)?)),
            Shortcut::AllocTensor { storage, offset, shape, dtype, site } => match &regs[*storage as usize] {
                VmValue::Storage(s) => {
                    s.create_view_of(*offset, cx.shape_tuple(*site, shape), *dtype).ok().map(VmValue::Tensor)
                }
                _ => None,
            },
            Shortcut::Null => Some(VmValue::Null),
        })
    }
}

/// Whether `match_shape` succeeds on register `reg` (storing what it binds into the heap).
fn match_shape(regs: &[VmValue], reg: u32, heap: Option<u32>, dims: &[(i64, i64)]) -> bool {
    let shape: &[i64] = match &regs[reg as usize] {
        VmValue::Tensor(t) => t.shape(),
        VmValue::Shape(s) => s,
        _ => return false,
    };
    let none = VmValue::Null;
    let heap_value = heap.map_or(&none, |h| &regs[h as usize]);
    let Ok(heap) = builtins::heap(&[heap_value], 0) else { return false };
    shape.len() == dims.len()
        && shape.iter().zip(dims).all(|(&d, &(code, r))| builtins::match_dim(&heap, code, r, d, String::new).is_ok())
}

fn register(a: Arg) -> Option<u32> {
    match a {
        Arg::Register(Reg::Index(r)) => Some(r),
        _ => None,
    }
}

/// An argument the executable fixes: an immediate or a constant.
struct Fixed<'a> {
    arg: Arg,
    constants: &'a [VmValue],
}

impl<'a> Fixed<'a> {
    fn value(&self) -> Option<&'a VmValue> {
        match self.arg {
            Arg::Const(c) => self.constants.get(c as usize),
            Arg::Register(Reg::Void) => Some(&VmValue::Null),
            _ => None,
        }
    }
    /// An error context as the checks take it: a string, or none.
    fn is_context(&self) -> bool {
        matches!(self.value(), Some(VmValue::Str(_) | VmValue::Null))
    }
    fn int(&self) -> Option<i64> {
        match (self.arg, self.value()) {
            (Arg::Immediate(v), _) => Some(v),
            (_, Some(VmValue::Int(v))) => Some(*v),
            _ => None,
        }
    }
    fn shape(&self) -> Option<&'a [i64]> {
        match self.value()? {
            VmValue::Shape(s) => Some(s),
            _ => None,
        }
    }
    /// A dtype argument: `Some(None)` for a null one (no dtype to check).
    fn dtype_or_none(&self) -> Option<Option<DLDataType>> {
        match self.value()? {
            VmValue::DType(t) => Some(Some(*t)),
            VmValue::Str(s) => DLDataType::parse(s).ok().map(Some),
            VmValue::Null => Some(None),
            _ => None,
        }
    }
}
