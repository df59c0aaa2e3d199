//! A per-run execution context over a shared [`Plan`]: the activation storage, the `DLTensor`
//! views kernels see, and the argument arrays built once, so `run()` is a loop of prebuilt
//! calls that allocates nothing and looks nothing up.

use super::plan::{Key, OpKind, Plan, StorageSpec};
use crate::abi::{type_code as tc, DLDataType, DLTensor, TVMBackendPackedCFunc, TVMValue};
use crate::runtime::base::error::{error_from_callee, last_error_generation, panic_message, Error, Result};
use crate::runtime::device::ALLOC_ALIGNMENT;
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::tensor::ndarray::{copy_from_to, NDArray};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

enum Call {
    Kernel(TVMBackendPackedCFunc),
    Packed(PackedFunc),
    Nop,
    Copy,
}

struct OpCall {
    call: Call,
    /// Range of this op's arguments in `args` / `codes`.
    start: usize,
    len: usize,
    node_id: u32,
}

/// Where a storage slot's memory comes from.
#[derive(Clone)]
enum Backing {
    /// Allocated for this executor.
    Own(NDArray),
    /// The plan's shared weights (copied on first write).
    Shared(NDArray),
    /// User memory set by zero-copy; the user keeps it alive.
    External(*mut c_void),
}

impl Backing {
    fn data(&self) -> *mut c_void {
        match self {
            Backing::Own(a) | Backing::Shared(a) => a.data_ptr(),
            Backing::External(p) => *p,
        }
    }
}

/// A graph executor: one per thread (it is `Send`, not shared).
pub struct Executor {
    plan: Arc<Plan>,
    backing: Vec<Backing>,
    /// Entry tensors (index = entry id), then per-op flattened copies.
    tensors: Box<[DLTensor]>,
    /// Storage id of each tensor in `tensors`.
    tensor_sid: Box<[u32]>,
    args: Box<[TVMValue]>,
    codes: Box<[c_int]>,
    calls: Box<[OpCall]>,
    /// Inputs whose values were loaded as params by this executor (`load_params`).
    loaded_params: Vec<bool>,
}

// SAFETY: the raw pointers point into memory this executor owns (its tensors and storage), the
// plan's immutable shapes (kept alive by the `Arc`), or user memory given by zero-copy calls,
// whose owner guarantees it outlives its use, as in TVM.
unsafe impl Send for Executor {}

/// Zero the storage of the inputs this executor owns (the data inputs; weights in the plan are
/// shared and left alone), so a run before any `set_input` computes on zeros, the same in every
/// process, instead of on whatever the allocator returned.
fn zero_data_inputs(plan: &Plan, backing: &[Backing]) -> Result<()> {
    for i in 0..plan.num_inputs() {
        if let Backing::Own(a) = &backing[plan.graph.attrs.storage_id[plan.input_entry(i)] as usize] {
            a.copy_from_bytes(&vec![0; a.nbytes()])?;
        }
    }
    Ok(())
}

impl Executor {
    pub fn new(plan: Arc<Plan>) -> Result<Executor> {
        Self::with_slots(plan, &mut |_, spec| NDArray::empty_bytes(spec.bytes, spec.device))
    }

    /// An executor whose storage slots (all but the plan's shared weights) come from `slot`,
    /// called with each slot's id and spec; it must return at least `spec.bytes` on
    /// `spec.device`, and may hand out memory other executors use at other times (an arena
    /// several executors take turns on).
    pub(crate) fn with_slots(
        plan: Arc<Plan>,
        slot: &mut dyn FnMut(usize, &StorageSpec) -> Result<NDArray>,
    ) -> Result<Executor> {
        let backing = plan
            .storage
            .iter()
            .enumerate()
            .map(|(sid, spec)| match &plan.shared_storage[sid] {
                Some(a) => Ok(Backing::Shared(a.clone())),
                None => slot(sid, spec).map(Backing::Own),
            })
            .collect::<Result<Vec<_>>>()?;
        zero_data_inputs(&plan, &backing)?;
        let n_entries = plan.graph.num_entries();
        let mut tensors: Vec<DLTensor> = Vec::with_capacity(n_entries);
        let mut tensor_sid: Vec<u32> = Vec::with_capacity(n_entries);
        for eid in 0..n_entries {
            let sid = plan.graph.attrs.storage_id[eid];
            tensors.push(plan.entry_tensor(eid, backing[sid as usize].data()));
            tensor_sid.push(sid);
        }
        // Arguments refer to tensors by index until the tensor array stops growing.
        let mut arg_tensor: Vec<usize> = Vec::new();
        let mut calls = Vec::with_capacity(plan.ops.len());
        for op in &plan.ops {
            let start = arg_tensor.len();
            for &eid in &op.args {
                let eid = eid as usize;
                if op.flatten {
                    let mut t = tensors[eid];
                    t.ndim = 1;
                    t.shape = plan.flat_shapes[eid].as_ptr() as *mut i64;
                    tensors.push(t);
                    tensor_sid.push(tensor_sid[eid]);
                    arg_tensor.push(tensors.len() - 1);
                } else {
                    arg_tensor.push(eid);
                }
            }
            let call = match &op.kind {
                OpKind::Kernel(f) => Call::Kernel(*f),
                OpKind::Packed(f) => Call::Packed(f.clone()),
                OpKind::Nop => Call::Nop,
                OpKind::Copy => Call::Copy,
            };
            calls.push(OpCall { call, start, len: op.args.len(), node_id: op.node_id });
        }
        let mut tensors = tensors.into_boxed_slice();
        let base = tensors.as_mut_ptr();
        let args: Box<[TVMValue]> = arg_tensor
            .iter()
            // SAFETY: indices are in bounds; the boxed slice never moves or resizes again.
            .map(|&i| TVMValue { v_handle: unsafe { base.add(i) } as *mut c_void })
            .collect();
        let codes = vec![tc::DLTENSOR_HANDLE; args.len()].into_boxed_slice();
        let n_inputs = plan.num_inputs();
        Ok(Executor {
            plan,
            backing,
            tensors,
            tensor_sid: tensor_sid.into_boxed_slice(),
            args,
            codes,
            calls: calls.into_boxed_slice(),
            loaded_params: vec![false; n_inputs],
        })
    }

    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }

    /// Run every op once, in order, on the calling thread.
    pub fn run(&mut self) -> Result<()> {
        // Kernels are called right here (the common case); everything else, and any failure
        // or returned value, goes through the out-of-line paths.
        for i in 0..self.calls.len() {
            if let Call::Kernel(f) = self.calls[i].call {
                self.call_kernel(f, i)?;
            } else {
                self.run_op(i)?;
            }
        }
        Ok(())
    }

    /// Call op `i`'s compiled kernel with its prebuilt arguments.
    #[inline(always)]
    fn call_kernel(&self, f: TVMBackendPackedCFunc, i: usize) -> Result<()> {
        let op = &self.calls[i];
        let mut rv = TVMValue::null();
        let mut rcode: c_int = tc::NULLPTR;
        let generation = last_error_generation();
        // An op without arguments gets NULL arrays, not an address at or past the end of ours.
        let (args, codes) = if op.len == 0 {
            (std::ptr::null_mut(), std::ptr::null_mut())
        } else {
            // SAFETY: `start + len` is within both arrays (built together in `new`).
            unsafe {
                (self.args.as_ptr().add(op.start) as *mut TVMValue, self.codes.as_ptr().add(op.start) as *mut c_int)
            }
        };
        // SAFETY: the argument arrays hold `len` prebuilt DLTensor pointers into `self.tensors`,
        // valid for the call; the kernel follows TVM's convention (it only reads `len` values and
        // leaves the return slots alone on void return, which is why they are pre-set).
        let status = unsafe { f(args, codes, op.len as c_int, &mut rv, &mut rcode, std::ptr::null_mut()) };
        if status != 0 || rcode != tc::NULLPTR {
            self.after_kernel(op.node_id, status, generation, rv, rcode)?;
        }
        Ok(())
    }

    /// A kernel failed or returned a value: build the error, or take and drop the value.
    #[cold]
    #[inline(never)]
    fn after_kernel(&self, node_id: u32, status: c_int, generation: u64, rv: TVMValue, rcode: c_int) -> Result<()> {
        if status != 0 {
            return Err(self.op_error(
                node_id,
                error_from_callee(generation, || {
                    Error::runtime(format!("kernel returned {status} without setting an error message"))
                }),
            ));
        }
        // SAFETY: kernel return values carry ownership of what they name.
        drop(unsafe { Value::adopt_c(rv, rcode) });
        Ok(())
    }

    /// Run op `i` (in run order) alone.
    #[inline]
    pub(crate) fn run_op(&self, i: usize) -> Result<()> {
        let op = &self.calls[i];
        match &op.call {
            Call::Kernel(f) => self.call_kernel(*f, i)?,
            Call::Packed(f) => {
                // SAFETY: prebuilt DLTensor pointers into `self.tensors` (see `entry_tensor`).
                let args = unsafe {
                    Args::new(&self.args[op.start..op.start + op.len], &self.codes[op.start..op.start + op.len])
                };
                // A panicking Rust function is reported with its node, like a failing kernel.
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f.call_args(args))) {
                    Ok(r) => {
                        r.map_err(|e| self.op_error(op.node_id, e))?;
                    }
                    Err(payload) => {
                        let msg = panic_message(&*payload);
                        return Err(self.op_error(op.node_id, Error::internal(format!("panic: {msg}"))));
                    }
                }
            }
            Call::Nop => {}
            Call::Copy => {
                // SAFETY: both arguments point into `self.tensors`, which this executor built over
                // its own storage (or zero-copy memory its user keeps alive).
                let (a, b) = unsafe {
                    (
                        TensorRef::new(&*(self.args[op.start].v_handle as *const DLTensor)),
                        TensorRef::new(&*(self.args[op.start + 1].v_handle as *const DLTensor)),
                    )
                };
                copy_from_to(a, b).map_err(|e| self.op_error(op.node_id, e))?;
            }
        }
        Ok(())
    }

    fn op_error(&self, node_id: u32, e: Error) -> Error {
        e.context(format!("graph executor: node `{}`", self.plan.graph.nodes[node_id as usize].name))
    }

    /// Number of ops in run order.
    pub(crate) fn num_ops(&self) -> usize {
        self.calls.len()
    }

    /// The graph node op `i` runs.
    pub(crate) fn op_node_id(&self, i: usize) -> u32 {
        self.calls[i].node_id
    }

    /// Run ops `0..=op_index_of(node)` (for debugging a node's output).
    pub fn run_until_node(&mut self, node_id: usize) -> Result<()> {
        for i in 0..self.calls.len() {
            if self.calls[i].node_id as usize > node_id {
                break;
            }
            self.run_op(i)?;
        }
        Ok(())
    }

    /// The entry of input `index`, or the front's range error.
    fn check_input_index(&self, index: usize) -> Result<usize> {
        let i = self.input(Key::Index(index as i64))?;
        Ok(self.plan.input_entry(i))
    }

    /// The entry of output `index`, or the front's range error.
    fn check_output_index(&self, index: usize) -> Result<usize> {
        let i = self.output(Key::Index(index as i64))?;
        Ok(self.plan.output_entry(i))
    }

    /// Resolve an input name to its index, or an error listing what exists.
    pub fn input_index(&self, name: &str) -> Result<usize> {
        self.plan.input_key(Key::Name(name))
    }

    fn repoint(&mut self, sid: usize, data: *mut c_void) {
        for (t, &s) in self.tensors.iter_mut().zip(self.tensor_sid.iter()) {
            if s as usize == sid {
                t.data = data;
            }
        }
    }

    /// Give storage `sid` private memory (copying the shared weights) before a write.
    pub(crate) fn make_private(&mut self, sid: usize) -> Result<()> {
        if let Backing::Shared(shared) = &self.backing[sid] {
            let spec = &self.plan.storage[sid];
            let own = NDArray::empty_bytes(spec.bytes, spec.device)?;
            let n = spec.bytes.min(shared.nbytes());
            let src = shared.create_view(&[n as i64], DLDataType::new(1, 8, 1))?;
            let dst = own.create_view(&[n as i64], DLDataType::new(1, 8, 1))?;
            copy_from_to(src.tensor(), dst.tensor())?;
            let data = own.data_ptr();
            self.backing[sid] = Backing::Own(own);
            self.repoint(sid, data);
        }
        Ok(())
    }

    /// Input `index`'s tensor as kernels see it, with memory of this executor's own (a weight
    /// shared with the plan is copied first). For callers that queue copies into it: the
    /// address stays put until a zero-copy or `share_params` call repoints the input.
    pub(crate) fn owned_input_tensor(&mut self, index: usize) -> Result<DLTensor> {
        let eid = self.check_input_index(index)?;
        self.make_private(self.plan.graph.attrs.storage_id[eid] as usize)?;
        Ok(self.tensors[eid])
    }

    /// Output `index`'s tensor as kernels see it (see [`Executor::owned_input_tensor`]).
    pub(crate) fn output_tensor(&self, index: usize) -> Result<DLTensor> {
        Ok(self.tensors[self.check_output_index(index)?])
    }

    /// Where entry `eid`'s data is now (it moves only through `&mut self` calls).
    pub(crate) fn entry_data(&self, eid: usize) -> *mut c_void {
        self.tensors[eid].data
    }

    /// Whether storage `sid` is still the plan's shared weights (a write makes it private).
    pub(crate) fn is_shared_weight(&self, sid: usize) -> bool {
        matches!(self.backing[sid], Backing::Shared(_))
    }

    /// Entry `eid`'s tensor as kernels see it.
    fn entry_tensor(&self, eid: usize) -> TensorRef<'_> {
        // SAFETY: the executor built `tensors` over its own storage (sized by the plan for each
        // entry) or zero-copy memory its user keeps alive; shapes point into the plan it holds.
        unsafe { TensorRef::new(&self.tensors[eid]) }
    }

    /// Copy `src` into input `index` (dtype and shape must match).
    pub fn set_input(&mut self, index: usize, src: TensorRef<'_>) -> Result<()> {
        let eid = self.check_input_index(index)?;
        let what = format!("set_input `{}`", self.plan.input_name(index));
        self.plan.check_tensor(eid, src, &what)?;
        src.check_contiguous("input")?;
        let sid = self.plan.graph.attrs.storage_id[eid] as usize;
        self.make_private(sid)?;
        copy_from_to(src, self.entry_tensor(eid)).map_err(|e| e.context(what))
    }

    fn check_external(&self, eid: usize, t: TensorRef<'_>, what: &str) -> Result<*mut c_void> {
        self.plan.check_tensor(eid, t, what)?;
        t.check_contiguous(what)?;
        let want_dev = self.plan.entry_device[eid];
        if t.device() != want_dev {
            return Err(Error::value(format!("{what}: expected device {want_dev}, got {}", t.device())));
        }
        let addr = t.data_addr() as usize;
        if t.raw().data.is_null() && self.plan.entry_bytes(eid) > 0 {
            return Err(Error::value(format!("{what}: data pointer is NULL")));
        }
        if addr % ALLOC_ALIGNMENT != 0 {
            return Err(Error::value(format!(
                "{what}: data must be {ALLOC_ALIGNMENT}-byte aligned, got address {addr:#x}"
            )));
        }
        // Every entry sharing the slot will use the user's memory: it must be big enough.
        let sid = self.plan.graph.attrs.storage_id[eid];
        let have = self.plan.entry_bytes(eid);
        for (other, &s) in self.plan.graph.attrs.storage_id.iter().enumerate() {
            if s == sid && self.plan.entry_bytes(other) > have {
                return Err(Error::value(format!(
                    "{what}: storage_id {sid} is shared with entry {other}, which needs {} bytes (the tensor has {have})",
                    self.plan.entry_bytes(other)
                )));
            }
        }
        Ok(addr as *mut c_void)
    }

    /// Make input `index` use the caller's memory directly (64-byte aligned, same dtype, shape
    /// and device).
    ///
    /// # Safety
    /// The tensor's data must stay valid for reads and writes until the input is set again or
    /// the executor is dropped, and for as long as any array returned by `get_input`,
    /// `get_output` or `get_entry` for this storage lives (those arrays borrow it without owning
    /// it). No one else may write it while the executor uses it. The executor itself may write it
    /// (`set_input`, or a run when the graph shares the storage with another entry).
    pub unsafe fn set_input_zero_copy(&mut self, index: usize, t: TensorRef<'_>) -> Result<()> {
        let eid = self.check_input_index(index)?;
        let what = format!("set_input_zero_copy `{}`", self.plan.input_name(index));
        let data = self.check_external(eid, t, &what)?;
        let sid = self.plan.graph.attrs.storage_id[eid] as usize;
        self.backing[sid] = Backing::External(data);
        self.repoint(sid, data);
        Ok(())
    }

    /// Make output `index` be written straight into the caller's memory.
    ///
    /// # Safety
    /// The tensor's data must stay valid for reads and writes until the output is set again or
    /// the executor is dropped, and for as long as any array returned by `get_input`,
    /// `get_output` or `get_entry` for this storage lives (those arrays borrow it without owning
    /// it). No one else may read or write it while a run writes it.
    pub unsafe fn set_output_zero_copy(&mut self, index: usize, t: TensorRef<'_>) -> Result<()> {
        let eid = self.check_output_index(index)?;
        let what = format!("set_output_zero_copy `{}`", self.plan.output_name(index));
        let data = self.check_external(eid, t, &what)?;
        let sid = self.plan.graph.attrs.storage_id[eid] as usize;
        if matches!(self.backing[sid], Backing::Shared(_)) {
            return Err(Error::value(format!("{what}: the output aliases a shared weight")));
        }
        self.backing[sid] = Backing::External(data);
        self.repoint(sid, data);
        Ok(())
    }

    /// Copy output `index` into `out` (dtype and shape must match).
    pub fn get_output_into(&self, index: usize, out: TensorRef<'_>) -> Result<()> {
        let eid = self.check_output_index(index)?;
        let what = format!("get_output `{}`", self.plan.output_name(index));
        self.plan.check_tensor(eid, out, &what)?;
        out.check_contiguous("output")?;
        copy_from_to(self.entry_tensor(eid), out).map_err(|e| e.context(what))
    }

    fn entry_array(&self, eid: usize) -> Result<NDArray> {
        let sid = self.plan.graph.attrs.storage_id[eid] as usize;
        let (shape, dtype) = (self.plan.entry_shape(eid), self.plan.entry_dtype(eid));
        match &self.backing[sid] {
            Backing::Own(a) | Backing::Shared(a) => a.create_view(shape, dtype),
            // SAFETY: the user keeps zero-copy memory alive while the executor uses it.
            Backing::External(p) => unsafe { NDArray::borrowed(*p, shape, dtype, self.plan.entry_device[eid]) },
        }
    }

    /// Output `index` as an array sharing the executor's memory (overwritten by the next run).
    pub fn get_output(&self, index: usize) -> Result<NDArray> {
        let eid = self.check_output_index(index)?;
        self.entry_array(eid)
    }

    /// Input `index` as an array sharing the executor's memory.
    pub fn get_input(&self, index: usize) -> Result<NDArray> {
        let eid = self.check_input_index(index)?;
        self.entry_array(eid)
    }

    /// Any entry (for debugging), as an array sharing the executor's memory.
    pub fn get_entry(&self, eid: usize) -> Result<NDArray> {
        if eid >= self.plan.graph.num_entries() {
            return Err(Error::index(format!("entry {eid} out of range ({} entries)", self.plan.graph.num_entries())));
        }
        self.entry_array(eid)
    }

    /// `load_params`: copy each named param into its input; unknown names are ignored. All
    /// params are checked before any is copied, so a bad blob leaves the executor unchanged.
    pub fn load_params(&mut self, blob: &[u8]) -> Result<()> {
        let mut known = Vec::new();
        for (name, arr) in crate::runtime::tensor::params::load_params(blob)? {
            if let Some(i) = self.plan.input_index(&name) {
                let what = format!("param `{name}`: set_input `{name}`");
                self.plan.check_tensor(self.plan.input_entry(i), arr.tensor(), &what)?;
                known.push((i, name, arr));
            }
        }
        for (i, name, arr) in known {
            self.set_input(i, arr.tensor()).map_err(|e| e.context(format!("param `{name}`")))?;
            self.loaded_params[i] = true;
        }
        Ok(())
    }

    /// `share_params`: use `other`'s storage for every input named in the params blob.
    pub fn share_params(&mut self, other: &Executor, blob: &[u8]) -> Result<()> {
        if !Arc::ptr_eq(&self.plan, &other.plan)
            && self.plan.graph.attrs.storage_id != other.plan.graph.attrs.storage_id
        {
            return Err(Error::value("share_params: the executors run different graphs"));
        }
        for (name, _) in crate::runtime::tensor::params::load_params(blob)? {
            let Some(i) = self.plan.input_index(&name) else { continue };
            let eid = self.plan.input_entry(i);
            let sid = self.plan.graph.attrs.storage_id[eid] as usize;
            if !self.plan.storage[sid].inputs_only {
                return Err(Error::value(format!("share_params: `{name}` shares storage with computed entries")));
            }
            let shared = match &other.backing[sid] {
                Backing::Own(a) | Backing::Shared(a) => Backing::Shared(a.clone()),
                Backing::External(p) => Backing::External(*p),
            };
            let data = shared.data();
            self.backing[sid] = shared;
            self.repoint(sid, data);
            self.loaded_params[i] = true;
        }
        Ok(())
    }

    /// Indices of the inputs a user feeds: not params of the plan or loaded by `load_params`.
    pub fn data_inputs(&self) -> Vec<usize> {
        (0..self.plan.num_inputs()).filter(|&i| !self.plan.is_param_input(i) && !self.is_loaded_param(i)).collect()
    }

    /// Whether input `index` was loaded as a param by this executor (`load_params`).
    pub fn is_loaded_param(&self, index: usize) -> bool {
        self.loaded_params[index]
    }
}
