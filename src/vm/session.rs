//! The VM's session: what every call of one initialized VM shares, immutable after creation and
//! handed around by `Arc` — the executable, its constants as register values, every function-table
//! entry resolved once to what a call runs, the devices and the allocator kind.

use super::builtins::Builtin;
use super::bytecode::{Arg, Instr, Reg};
use super::executable::{Executable, FuncKind};
use super::shortcut::Shortcut;
use super::value::{Callable, VmValue};
use crate::abi::DLDevice;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::device::device_api;
use crate::runtime::function::packed::{Module, PackedFunc};
use crate::runtime::function::registry;
use std::sync::Arc;

/// How storage is allocated (`vm_initialization`'s allocator code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocatorKind {
    /// 1: a new buffer for every `alloc_storage`.
    Naive,
    /// 2: buffers of a frame are reused across its calls once nothing refers to them.
    Pooled,
}

impl AllocatorKind {
    pub fn from_code(code: i64) -> Result<AllocatorKind> {
        match code {
            1 => Ok(AllocatorKind::Naive),
            2 => Ok(AllocatorKind::Pooled),
            c => Err(Error::value(format!("unknown allocator type {c} (1 naive, 2 pooled)"))),
        }
    }
}

/// What a function-table entry runs.
#[derive(Clone)]
pub enum Callee {
    Builtin(Builtin),
    Packed(PackedFunc),
    /// A VM function (its table index).
    Bytecode(usize),
}

/// One initialized VM's shared, immutable state.
pub struct Session {
    pub exec: Arc<Executable>,
    pub constants: Vec<VmValue>,
    /// The value of each call argument of the executable that is neither a register nor a
    /// constant (immediates, `%void`, `%vm`, function references), made once, indexed like
    /// `exec.args`; `Null` at the other positions. Builtins read them in place.
    pub immediates: Vec<VmValue>,
    pub callees: Vec<Callee>,
    /// The shortcut of each call instruction that has one, indexed like `exec.code`.
    pub shortcuts: Vec<Option<Shortcut>>,
    pub devices: Vec<DLDevice>,
    pub allocator: AllocatorKind,
    /// The executable module (its imports are the kernel library); kept alive with the kernels.
    _module: Module,
}

impl Session {
    /// Resolve every function of `exec` against `module`'s imports, the VM builtins and the
    /// global registry (in that order, as TVM does), for `devices` (the first one runs the
    /// kernels, the last one is the host); tensor constants are copied to the first device once.
    pub fn new(
        exec: Arc<Executable>,
        module: Module,
        devices: &[DLDevice],
        allocator: AllocatorKind,
    ) -> Result<Session> {
        if devices.is_empty() {
            return Err(Error::value("vm_initialization needs at least one device"));
        }
        for d in devices {
            device_api(d.device_type)?;
        }
        let callees = exec
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| match f.kind {
                FuncKind::Vm => Ok(Callee::Bytecode(i)),
                FuncKind::Packed => resolve(&module, &f.name),
                FuncKind::VmTir => Err(Error::unsupported(format!(
                    "function `{}` is a VM TIR function (compiled with exec_mode=\"compiled\"), which this runtime does not run",
                    f.name
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        let constants = exec
            .constants
            .iter()
            .map(|c| VmValue::from_constant(c).on_device(devices[0]))
            .collect::<Result<Vec<_>>>()?;
        let immediates = exec.args.iter().map(|&a| immediate(a)).collect();
        let shortcuts = shortcuts(&exec, &callees, &constants);
        Ok(Session {
            exec,
            constants,
            immediates,
            callees,
            shortcuts,
            devices: devices.to_vec(),
            allocator,
            _module: module,
        })
    }

    /// A caller's values as a VM function takes them: tensors on the first device.
    pub fn inputs(&self, vals: Vec<VmValue>) -> Result<Vec<VmValue>> {
        vals.into_iter().map(|v| v.on_device(self.devices[0])).collect()
    }

    /// The index of a VM function by name, or an error naming it.
    pub fn vm_function(&self, name: &str) -> Result<usize> {
        match self.exec.function(name) {
            Some(i) if self.exec.functions[i].kind == FuncKind::Vm => Ok(i),
            Some(_) => Err(Error::value(format!("`{name}` is not a VM function of the executable"))),
            None => Err(Error::value(format!("Unknown function: {name}"))),
        }
    }
}

fn shortcuts(exec: &Executable, callees: &[Callee], constants: &[VmValue]) -> Vec<Option<Shortcut>> {
    let mut sites = 0;
    let site = |instr: &Instr| match *instr {
        Instr::Call { func, args, .. } => match callees[func as usize] {
            Callee::Builtin(b) => Shortcut::new(b, exec.call_args(args), constants, &mut sites),
            _ => None,
        },
        _ => None,
    };
    exec.code.iter().map(site).collect()
}

/// A call argument's value when it is not read from a register or the constant pool.
fn immediate(a: Arg) -> VmValue {
    match a {
        Arg::Immediate(v) => VmValue::Int(v),
        Arg::Register(Reg::Vm) => VmValue::Vm,
        Arg::Func(f) => VmValue::Func(Callable::Function(f)),
        Arg::Register(_) | Arg::Const(_) => VmValue::Null,
    }
}

fn resolve(module: &Module, name: &str) -> Result<Callee> {
    for lib in module.imports() {
        if let Some(f) = lib.get_function(name, true)? {
            return Ok(Callee::Packed(f));
        }
    }
    if let Some(b) = Builtin::from_name(name) {
        return Ok(Callee::Builtin(b));
    }
    registry::get(name).map(Callee::Packed).ok_or_else(|| {
        Error::attribute(format!(
            "cannot find the function `{name}` in the VM's kernel library, the VM builtins or the global registry"
        ))
    })
}
