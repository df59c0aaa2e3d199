//! The VM as TVM's modules: the executable module (`relax.Executable` for TVM 0.18's files,
//! `relax.VMExecutable` for tvm-ffi's: what the blob of a `.so` decodes to; its import is the
//! kernel library) and the VM module `vm_load_executable` makes, with TVM's function names.
//!
//! A VM module holds one session (made by `vm_initialization`) and stacks of idle frames, one per
//! thread slot: a call takes a frame from its thread's stack (or makes one), runs, and puts it
//! back, so threads calling one VM at once each run on their own frame over the shared session
//! without contending for a lock.

use super::describe::describe;
use super::executable::{Executable, Format, FuncKind, MAGIC_V1, MAGIC_V2};
use super::frame::Frame;
use super::session::{AllocatorKind, Session};
use super::value::VmValue;
use crate::abi::DLDevice;
use crate::runtime::base::byteio::{Input, Reader};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, Module, ModuleNode, PackedFunc, Value};
use crate::runtime::function::registry;
use once_cell::sync::Lazy;
use parking_lot::{Mutex, RwLock};
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// The executable module.
pub struct ExecutableModule {
    pub exec: Arc<Executable>,
}

/// Blob loader for `relax.Executable` / `relax.VMExecutable`: the executable's bytes as one
/// length-prefixed string (how both `__tvm_dev_mblob` and tvm-ffi's library binary store them),
/// or, from a loader that already unwrapped that string, the bytes themselves (they start with
/// the magic, which no length prefix bounded by the input can equal).
pub fn load_binary(r: &mut Reader<'_>) -> Result<Module> {
    let at = r.position();
    let first = r.u64("Relax VM executable length")?;
    let exec = if first == MAGIC_V1 || first == MAGIC_V2 {
        let rest = r.bytes(r.remaining(), "Relax VM executable")?;
        Executable::parse(&[&first.to_le_bytes()[..], rest].concat())?
    } else {
        let n = usize::try_from(first).ok().filter(|&n| n <= r.remaining()).ok_or_else(|| {
            r.error_at(at, format!("executable length {first} exceeds the {} bytes available", r.remaining()))
        })?;
        Executable::parse(r.bytes(n, "Relax VM executable")?)?
    };
    Ok(Module::from_node(ExecutableModule { exec: Arc::new(exec) }))
}

impl ExecutableModule {
    /// The executable module that `m` is, or a type error naming `m`'s type.
    pub fn of(m: &Module) -> Result<&ExecutableModule> {
        m.node()
            .as_any()
            .downcast_ref::<ExecutableModule>()
            .ok_or_else(|| Error::type_error(format!("module of type `{}` is not a Relax VM executable", m.type_key())))
    }
}

impl ModuleNode for ExecutableModule {
    /// TVM's type key for the generation that wrote the executable.
    fn type_key(&self) -> &str {
        match self.exec.format {
            Format::Tvm018 => "relax.Executable",
            Format::TvmFfi => "relax.VMExecutable",
        }
    }

    fn get_function(&self, name: &str, this: &Module) -> Result<Option<PackedFunc>> {
        let exec = self.exec.clone();
        let this = this.clone();
        Ok(Some(match name {
            "vm_load_executable" => PackedFunc::from_typed(move |_| Ok(Value::Module(vm_module(this.clone())?))),
            "vm_profiler_load_executable" => {
                PackedFunc::from_typed(move |_| Ok(Value::Module(vm_profiler_module(this.clone())?)))
            }
            "has_function" => PackedFunc::from_typed(move |a| Ok(Value::Bool(exec.function(&a.string(0)?).is_some()))),
            "stats" => PackedFunc::from_typed(move |_| Ok(Value::Str(exec.stats()))),
            "as_text" => PackedFunc::from_typed(move |_| Ok(Value::Str(exec.as_text()))),
            "describe" => PackedFunc::from_typed(move |_| Ok(Value::Str(describe(&exec)))),
            _ => return Ok(None),
        }))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A new VM over the executable module `exec_module` (not yet initialized).
pub fn vm_module(exec_module: Module) -> Result<Module> {
    new_vm(exec_module, false)
}

/// [`vm_module`] with TVM's profiler function `profile` ([`super::profiler`]).
pub fn vm_profiler_module(exec_module: Module) -> Result<Module> {
    new_vm(exec_module, true)
}

fn new_vm(exec_module: Module, profiling: bool) -> Result<Module> {
    let exec = ExecutableModule::of(&exec_module)?.exec.clone();
    Ok(Module::from_node(VmModule {
        exec,
        profiling,
        exec_module,
        session: RwLock::new(None),
        generation: AtomicU64::new(0),
        slots: idle_frames(),
        state: Mutex::new(Stateful::default()),
        saved: RwLock::new(HashMap::new()),
        any_saved: AtomicBool::new(false),
        instrument: RwLock::new(None),
        any_instrument: AtomicBool::new(false),
    }))
}

#[derive(Default)]
struct Stateful {
    inputs: HashMap<String, Vec<VmValue>>,
    outputs: HashMap<String, VmValue>,
}

/// A function saved by `save_function`: a function of the executable with bound arguments.
#[derive(Clone)]
struct Saved {
    func: usize,
    args: Vec<VmValue>,
    include_return: bool,
}

/// The VM module.
pub struct VmModule {
    exec: Arc<Executable>,
    /// Made by `vm_profiler_load_executable`: it has `profile`.
    profiling: bool,
    exec_module: Module,
    session: RwLock<Option<Arc<Session>>>,
    /// Bumped by every `vm_initialization`: idle frames of an earlier one are dropped.
    generation: AtomicU64,
    /// Idle frames, one stack per thread slot, so that threads calling at once touch no
    /// shared lock or counter; [`release_idle_frames`] reaches them through a weak reference.
    slots: Arc<Slots>,
    state: Mutex<Stateful>,
    saved: RwLock<HashMap<String, Saved>>,
    /// Whether `saved` ever held a function (a call skips its lock until then).
    any_saved: AtomicBool,
    /// `set_instrument`'s function, and whether one was ever set (a call skips the lock until then).
    instrument: RwLock<Option<PackedFunc>>,
    any_instrument: AtomicBool,
}

/// How many stacks of idle frames a VM keeps.
const SLOTS: usize = 16;

type Slots = [Slot; SLOTS];

/// The idle frames of every VM, which [`release_idle_frames`] empties.
static ALL_IDLE: Lazy<Mutex<Vec<Weak<Slots>>>> = Lazy::new(Default::default);

/// Empty stacks of idle frames for a new VM, known to [`release_idle_frames`] (which forgets
/// those of VMs gone since).
fn idle_frames() -> Arc<Slots> {
    let slots = Arc::new(std::array::from_fn(|_| Slot::default()));
    let mut all = ALL_IDLE.lock();
    all.retain(|w| w.strong_count() > 0);
    all.push(Arc::downgrade(&slots));
    slots
}

/// `vm.builtin.memory_manager.clear`: drop every VM's idle frames, and with them the storage
/// their pools cached (a frame in use keeps its own; the next call makes a new frame).
pub fn release_idle_frames() {
    let live: Vec<Arc<Slots>> = ALL_IDLE.lock().iter().filter_map(Weak::upgrade).collect();
    for slots in live {
        for slot in slots.iter() {
            let frames = std::mem::take(&mut *slot.0.lock());
            drop(frames); // outside the lock: releasing storage may take a while
        }
    }
}

/// Idle frames with the generation they were made in, alone on their cache lines.
#[derive(Default)]
#[repr(align(128))]
struct Slot(Mutex<Vec<(u64, Frame)>>);

/// This thread's slot number.
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
    }
    SLOT.with(|s| *s)
}

/// The names of the VM module's own functions (the executable's functions are looked up after).
const API: &[&str] = &[
    "vm_initialization",
    "set_input",
    "invoke_stateful",
    "get_output",
    "get_output_arity",
    "get_function_arity",
    "get_function_param_name",
    "save_function",
    "invoke_closure",
    "set_instrument",
    "profile",
];

impl VmModule {
    /// The VM module that `m` is, or a type error naming `m`'s type.
    pub fn of(m: &Module) -> Result<&VmModule> {
        m.node().as_any().downcast_ref::<VmModule>().ok_or_else(|| {
            Error::type_error(format!("module of type `{}` is not a relax.VirtualMachine", m.type_key()))
        })
    }

    /// `vm_initialization`: devices and allocators as (device type, device id, allocator) triples.
    pub fn initialize(&self, devices: &[DLDevice], allocator: AllocatorKind) -> Result<Arc<Session>> {
        let s = Arc::new(Session::new(self.exec.clone(), self.exec_module.clone(), devices, allocator)?);
        *self.session.write() = Some(s.clone());
        self.generation.fetch_add(1, Ordering::Release);
        for slot in self.slots.iter() {
            slot.0.lock().clear();
        }
        Ok(s)
    }

    /// The session `vm_initialization` made.
    pub fn session(&self) -> Result<Arc<Session>> {
        self.session.read().clone().ok_or_else(|| {
            Error::value(
                "the VM is not initialized: call vm_initialization(device_type, device_id, allocator_type) first",
            )
        })
    }

    /// Run `f` on an idle frame of the current session (a new one if none is idle).
    pub fn with_frame<T>(&self, f: impl FnOnce(&mut Frame) -> Result<T>) -> Result<T> {
        // Read before the session: a frame tagged with a generation holds that generation's
        // session or a later one.
        let generation = self.generation.load(Ordering::Acquire);
        let slot = &self.slots[thread_slot()];
        let idle = slot.0.lock().pop().filter(|(g, _)| *g == generation);
        let (g, mut frame) = match idle {
            Some(idle) => idle,
            None => (generation, Frame::new(self.session()?)),
        };
        if self.any_instrument.load(Ordering::Acquire) {
            frame.set_instrument(self.instrument.read().clone());
        }
        let out = f(&mut frame);
        slot.0.lock().push((g, frame));
        out
    }

    /// Call the VM function (or saved function) `name` with caller values.
    pub fn call(&self, name: &str, args: &[Value]) -> Result<Value> {
        let saved = self.saved_function(name);
        self.with_frame(|fr| match saved {
            Some(s) => {
                let mut vals = args.iter().map(|v| VmValue::from_value(v.clone())).collect::<Result<Vec<_>>>()?;
                vals.extend(s.args.iter().cloned());
                let out = fr.invoke(s.func, vals)?;
                if s.include_return {
                    fr.to_value(out)
                } else {
                    Ok(Value::Null)
                }
            }
            None => fr.call(name, args),
        })
    }

    /// The function saved as `name`, if any.
    fn saved_function(&self, name: &str) -> Option<Saved> {
        if !self.any_saved.load(Ordering::Acquire) {
            return None;
        }
        self.saved.read().get(name).cloned()
    }

    /// [`VmModule::call`] on packed-call arguments; `index` is the VM function `name` names.
    fn call_args(&self, name: &str, index: Option<usize>, args: Args<'_>) -> Result<Value> {
        match index {
            Some(f) if !self.any_saved.load(Ordering::Acquire) => self.with_frame(|fr| fr.call_args(f, args)),
            _ => {
                let vals = (0..args.len()).map(|i| args.to_value(i)).collect::<Result<Vec<_>>>()?;
                self.call(name, &vals)
            }
        }
    }

    fn func_info(&self, name: &str) -> Result<&super::executable::FuncInfo> {
        self.exec
            .function(name)
            .map(|i| &self.exec.functions[i])
            .ok_or_else(|| Error::value(format!("Unknown function: {name}")))
    }

    fn has(&self, name: &str) -> bool {
        self.saved.read().contains_key(name)
            || self.exec.function(name).is_some_and(|i| self.exec.functions[i].kind == FuncKind::Vm)
    }

    fn set_input(&self, args: Args<'_>) -> Result<()> {
        let name = args.string(0)?;
        let info = self.func_info(&name)?;
        if args.len() - 1 != info.num_args {
            return Err(Error::value(format!(
                "set_input: `{name}` takes {} arguments, {} were given",
                info.num_args,
                args.len() - 1
            )));
        }
        let vals = (1..args.len()).map(|i| VmValue::from_value(args.to_value(i)?)).collect::<Result<Vec<_>>>()?;
        let vals = match self.session.read().clone() {
            Some(s) => s.inputs(vals)?,
            None => vals,
        };
        self.state.lock().inputs.insert(name, vals);
        Ok(())
    }

    fn invoke_stateful(&self, name: &str) -> Result<()> {
        let session = self.session()?;
        let f = session.vm_function(name)?;
        let inputs = self.state.lock().inputs.get(name).cloned().ok_or_else(|| {
            Error::value(format!("No inputs set for stateful call of {name}; use `set_input` first."))
        })?;
        let out = self.with_frame(|fr| fr.invoke(f, inputs))?;
        self.state.lock().outputs.insert(name.to_string(), out);
        Ok(())
    }

    /// The saved output of `args[0]`, indexed into by the further arguments.
    fn output(&self, args: &Args<'_>) -> Result<VmValue> {
        let name = args.string(0)?;
        let mut v = self.state.lock().outputs.get(&name).cloned().ok_or_else(|| {
            Error::value(format!("No output saved for call of \"{name}\"; use `invoke_stateful` to call it first."))
        })?;
        for i in 1..args.len() {
            let k = args.int(i)?;
            let items = match &v {
                VmValue::Tuple(t) => t.clone(),
                other => return Err(Error::index(format!("get_output: index {k} into a {}", other.kind()))),
            };
            v = usize::try_from(k).ok().and_then(|k| items.get(k)).cloned().ok_or_else(|| {
                Error::index(format!("get_output: index {k} out of range for a tuple of {}", items.len()))
            })?;
        }
        Ok(v)
    }

    fn save_function(&self, args: Args<'_>) -> Result<()> {
        if args.len() < 3 {
            return Err(Error::value("save_function expects (function name, saved name, include_return, args...)"));
        }
        let (name, save_as) = (args.string(0)?, args.string(1)?);
        let include_return = args.int(2)? != 0;
        let session = self.session()?;
        let func = session.vm_function(&name)?;
        let vals = (3..args.len()).map(|i| VmValue::from_value(args.to_value(i)?)).collect::<Result<Vec<_>>>()?;
        let vals = session.inputs(vals)?;
        self.saved.write().insert(save_as, Saved { func, args: vals, include_return });
        self.any_saved.store(true, Ordering::Release);
        Ok(())
    }

    fn invoke_closure(&self, args: Args<'_>) -> Result<Value> {
        let callee = match VmValue::from_value(args.to_value(0)?)? {
            VmValue::Func(c) => c,
            v => {
                return Err(Error::type_error(format!(
                    "invoke_closure expects a closure or function, got {}",
                    v.kind()
                )))
            }
        };
        let vals = (1..args.len()).map(|i| VmValue::from_value(args.to_value(i)?)).collect::<Result<Vec<_>>>()?;
        self.with_frame(|fr| {
            let out = fr.call_value(&callee, vals)?;
            fr.to_value(out)
        })
    }

    /// `set_instrument(f)`, or `set_instrument(global name, *args)` (the global makes the
    /// function), or NULL to stop instrumenting.
    fn set_instrument(&self, args: Args<'_>) -> Result<()> {
        let f = match args.to_value(0)? {
            Value::Func(f) => Some(f),
            Value::Null => None,
            Value::Str(name) => {
                let factory = registry::get(&name)
                    .ok_or_else(|| Error::value(format!("set_instrument: no global function `{name}`")))?;
                let rest = (1..args.len()).map(|i| args.to_value(i)).collect::<Result<Vec<_>>>()?;
                Some(factory.call(&rest)?.into_func()?)
            }
            v => {
                return Err(Error::type_error(format!(
                    "set_instrument expects a function or a name, got {}",
                    v.type_name()
                )))
            }
        };
        *self.instrument.write() = f;
        self.any_instrument.store(true, Ordering::Release);
        Ok(())
    }

    fn api(&self, name: &str, args: Args<'_>) -> Result<Value> {
        match name {
            "vm_initialization" => {
                let (devices, allocator) = init_args(&args)?;
                self.initialize(&devices, allocator).map(|_| Value::Null)
            }
            "set_input" => self.set_input(args).map(|_| Value::Null),
            "invoke_stateful" => self.invoke_stateful(&args.string(0)?).map(|_| Value::Null),
            "get_output" => match self.output(&args)? {
                VmValue::Tuple(_) => Err(Error::value(
                    "`get_output` cannot return a tuple; give the index of an element as a further argument",
                )),
                v => self.with_frame(|fr| fr.to_value(v)),
            },
            "get_output_arity" => Ok(Value::Int(match self.output(&args)? {
                VmValue::Tuple(t) => t.len() as i64,
                _ => -1,
            })),
            "get_function_arity" => Ok(Value::Int(self.func_info(&args.string(0)?)?.param_names.len() as i64)),
            "get_function_param_name" => {
                let (name, i) = (args.string(0)?, args.int(1)?);
                let names = &self.func_info(&name)?.param_names;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| names.get(i))
                    .map(|n| Value::Str(n.clone()))
                    .ok_or_else(|| Error::value(format!("Invalid index for {name} ({i} out of {})", names.len())))
            }
            "save_function" => self.save_function(args).map(|_| Value::Null),
            "invoke_closure" => self.invoke_closure(args),
            "set_instrument" => self.set_instrument(args).map(|_| Value::Null),
            "profile" => {
                let vals = (1..args.len()).map(|i| args.to_value(i)).collect::<Result<Vec<_>>>()?;
                super::profiler::profile(&self.exec_module, &*self.session()?, &args.string(0)?, &vals).map(Value::Str)
            }
            other => Err(Error::internal(format!("no VM API function `{other}`"))),
        }
    }
}

/// `vm_initialization`'s arguments: one or more (device type, device id, allocator) triples.
fn init_args(args: &Args<'_>) -> Result<(Vec<DLDevice>, AllocatorKind)> {
    if args.is_empty() || args.len() % 3 != 0 {
        return Err(Error::value(format!(
            "vm_initialization expects (device_type, device_id, allocator_type) triples, got {} arguments",
            args.len()
        )));
    }
    let mut devices = Vec::new();
    let mut kinds = Vec::new();
    for i in (0..args.len()).step_by(3) {
        let (t, id) = (args.int(i)?, args.int(i + 1)?);
        let t = i32::try_from(t).map_err(|_| Error::value(format!("device type {t} out of range")))?;
        let id = i32::try_from(id).map_err(|_| Error::value(format!("device id {id} out of range")))?;
        devices.push(DLDevice { device_type: t, device_id: id });
        kinds.push(AllocatorKind::from_code(args.int(i + 2)?)?);
    }
    if kinds.windows(2).any(|w| w[0] != w[1]) {
        return Err(Error::unsupported("devices with different allocator types"));
    }
    Ok((devices, kinds[0]))
}

impl ModuleNode for VmModule {
    fn type_key(&self) -> &str {
        "relax.VirtualMachine"
    }

    fn get_function(&self, name: &str, this: &Module) -> Result<Option<PackedFunc>> {
        let this = this.clone();
        let name = name.to_string();
        if API.contains(&name.as_str()) && (name != "profile" || self.profiling) {
            return Ok(Some(PackedFunc::from_typed(move |args| VmModule::of(&this)?.api(&name, args))));
        }
        if !self.has(&name) {
            return Ok(None);
        }
        let index = self.exec.function(&name).filter(|&i| self.exec.functions[i].kind == FuncKind::Vm);
        Ok(Some(PackedFunc::from_typed(move |args| VmModule::of(&this)?.call_args(&name, index, args))))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
