//! The state of a recurrent model (RWKV, Mamba-like models compiled by TVM):
//! `relax.vm.RNNStateImp`, a `relax.vm.KVState` as the paged KV cache is one. Per layer and per
//! kind of state, one tensor holds every sequence's state (axis 0: a slot per sequence, axis 1:
//! the last `max_history` steps, kept so that speculative steps can be popped), allocated once
//! at creation. The model's own kernels read and write it (`f_gets` / `f_sets`, handed over at
//! creation), given the slot and history index of each sequence of the batch.
//!
//! `vm.builtin.rnn_state_create`, `_get`, `_set`, `_debug_get`, and the `vm.builtin.kv_state_*`
//! calls (add, remove, fork, pop, begin and end a forward pass, clear), with apache-tvm's
//! argument order; a sequence's history wraps round `max_history` slots, a decode step (one
//! token) can be popped back and a prefill (several) cannot.

use crate::abi::DLDataType;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::header::{ObjPtr, ObjectRef, ObjectType};
use crate::runtime::object::type_table::{type_index as ti, type_key_of};
use crate::runtime::tensor::ndarray::{copy_from_to, NDArray};
use parking_lot::Mutex;
use std::collections::HashMap;

/// TVM's type keys: the RNN state's interface and the implementation (a `relax.vm.KVState`).
pub const RNN_STATE_KEY: &str = "relax.vm.RNNState";
pub const TYPE_KEY: &str = "relax.vm.RNNStateImp";

/// One sequence's place in the storage.
#[derive(Clone, Copy)]
struct Sequence {
    slot: i64,
    length: i64,
    /// Steps that can be popped back.
    available_history: i64,
    /// The history index holding the current state.
    history: i64,
}

struct State {
    max_history: i64,
    f_gets: Vec<PackedFunc>,
    f_sets: Vec<PackedFunc>,
    init: Vec<NDArray>,
    /// `[layer][state]`: (slots, max_history, *init[state].shape).
    storages: Vec<Vec<NDArray>>,
    free_slots: Vec<i64>,
    sequences: HashMap<i64, Sequence>,
    /// The batch of the forward pass begun last: sequence ids and their new tokens.
    batch: Vec<(i64, i64)>,
    /// The batch's slot and history indices on the device (int32), once synchronized.
    slot_ids: NDArray,
    history_ids: NDArray,
    synced: Option<(NDArray, NDArray)>,
}

/// The RNN state object (calls on one state from several threads take turns).
pub struct RnnStateObj(Mutex<State>);

impl ObjectType for RnnStateObj {
    /// Made at [`TYPE_KEY`]'s index, read back through [`state_arg`].
    const TYPE_INDEX: u32 = ti::ROOT;
}

fn type_index() -> Result<u32> {
    static INDEX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    super::kv_state::type_index(&INDEX, RNN_STATE_KEY, TYPE_KEY)
}

/// `body` on the RNN state `o` is, if it is one made here; whether it is.
pub(super) fn as_kv_state(
    o: &ObjectRef,
    body: &mut dyn FnMut(&dyn super::kv_state::KvState) -> Result<()>,
) -> Result<bool> {
    super::kv_state::run_on(of_object(o)?, body)
}

/// The RNN state `o` is, if it is one made here.
fn of_object(o: &ObjectRef) -> Result<Option<ObjPtr<RnnStateObj>>> {
    // SAFETY: `create` makes every object of this index, with this payload.
    Ok(unsafe { super::kv_state::state_of(o, type_index()?) })
}

fn state_arg(args: &Args<'_>, i: usize) -> Result<ObjPtr<RnnStateObj>> {
    let o = args.object(i)?;
    of_object(&o)?.ok_or_else(|| {
        Error::type_error(format!("argument {i}: expected a {RNN_STATE_KEY}, got {}", type_key_of(o.type_index())))
    })
}

pub(super) fn globals() -> Vec<(&'static str, PackedFunc)> {
    let f = |name, body: fn(Args<'_>) -> Result<Value>| (name, PackedFunc::from_typed(body));
    vec![
        f("vm.builtin.rnn_state_create", create_global),
        f("vm.builtin.rnn_state_get", |a| access(a, "get")),
        f("vm.builtin.rnn_state_set", |a| access(a, "set")),
        f("vm.builtin.rnn_state_debug_get", debug_get_global),
    ]
}

fn create_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(
        6,
        "vm.builtin.rnn_state_create(num_layers, reserved_num_seqs, max_history, f_gets, f_sets, init_layer_value)",
    )?;
    let init = super::args::items(&args, 5)?.into_iter().map(Value::into_ndarray).collect::<Result<Vec<_>>>()?;
    let state = create(
        args.int(0)?,
        args.int(1)?,
        args.int(2)?,
        super::args::functions(&args, 3)?,
        super::args::functions(&args, 4)?,
        init,
    )?;
    Ok(Value::Object(state.to_object_ref()))
}

/// A state for `reserved` sequences of `layers` layers, each with the states `init` gives
/// (their shapes, dtypes, device and starting values), `max_history` steps of each kept.
pub fn create(
    layers: i64,
    reserved: i64,
    max_history: i64,
    f_gets: Vec<PackedFunc>,
    f_sets: Vec<PackedFunc>,
    init: Vec<NDArray>,
) -> Result<ObjPtr<RnnStateObj>> {
    let fail = |m: String| Err(Error::internal(m));
    if layers <= 0 {
        return fail("The number of layers should be greater than 0.".into());
    }
    if reserved <= 0 {
        return fail("The number of reserved sequences should be greater than 0.".into());
    }
    if max_history <= 0 {
        return fail("At least 1 history slot to store the current state".into());
    }
    let Some(first) = init.first() else {
        return fail("The number of states per layer should be greater than 0.".into());
    };
    let device = first.device();
    if init.iter().any(|t| t.device() != device) {
        return fail("The device type of all states should be the same.".into());
    }
    for (what, n) in [("getters", f_gets.len()), ("setters", f_sets.len())] {
        if n != init.len() {
            return fail(format!("The number of state {what} should be the same as the number of states per layer, but got {n} and {} respectively.", init.len()));
        }
    }
    let storage = |t: &NDArray| {
        let shape: Vec<i64> = [reserved, max_history].into_iter().chain(t.shape().iter().copied()).collect();
        NDArray::empty(&shape, t.dtype(), device)
    };
    let storages = (0..layers).map(|_| init.iter().map(storage).collect()).collect::<Result<Vec<Vec<_>>>>()?;
    let int32 = DLDataType::parse("int32")?;
    let state = State {
        max_history,
        f_gets,
        f_sets,
        storages,
        free_slots: (0..reserved).rev().collect(),
        sequences: HashMap::new(),
        batch: Vec::new(),
        slot_ids: NDArray::empty(&[reserved], int32, device)?,
        history_ids: NDArray::empty(&[reserved], int32, device)?,
        synced: None,
        init,
    };
    Ok(ObjPtr::new_as(RnnStateObj(Mutex::new(state)), type_index()?))
}

impl super::kv_state::KvState for RnnStateObj {
    fn add(&self, id: i64) -> Result<()> {
        self.0.lock().add(id)
    }

    fn remove(&self, id: i64) -> Result<()> {
        self.0.lock().remove(id)
    }

    /// The whole state is copied: a recurrent state cannot be cut at a position.
    fn fork(&self, parent: i64, child: i64, _pos: i64) -> Result<()> {
        self.0.lock().fork(parent, child)
    }

    fn popn(&self, id: i64, n: i64) -> Result<()> {
        self.0.lock().popn(id, n)
    }

    fn begin_forward(&self, ids: &[i64], lengths: &[i64], tree: Option<&[i64]>) -> Result<()> {
        self.0.lock().begin_forward(ids, lengths, tree)
    }

    fn end_forward(&self) -> Result<()> {
        self.0.lock().end_forward()
    }

    fn clear(&self) -> Result<()> {
        self.0.lock().clear();
        Ok(())
    }
}

impl State {
    fn sequence(&self, id: i64) -> Result<Sequence> {
        self.sequences.get(&id).copied().ok_or_else(|| {
            Error::internal(format!("The sequence \"{id}\" cannot be found in the space state storage."))
        })
    }

    /// State `s` of layer `l` at `slot`, history index `history` (`steps` of them from there).
    fn place(&self, l: usize, s: usize, slot: i64, history: i64, steps: i64) -> Result<NDArray> {
        let (storage, one) = (&self.storages[l][s], &self.init[s]);
        let shape: Vec<i64> = std::iter::once(steps).chain(one.shape().iter().copied()).collect();
        let at = (slot * self.max_history + history) as usize * one.nbytes();
        storage.create_view_at(at, &shape, one.dtype())
    }

    fn each_state(&self, mut f: impl FnMut(usize, usize) -> Result<()>) -> Result<()> {
        for l in 0..self.storages.len() {
            for s in 0..self.init.len() {
                f(l, s)?;
            }
        }
        Ok(())
    }

    /// A free slot, each state of it (layer, state) filled by `fill`; given back when that fails.
    fn new_slot(&mut self, fill: impl Fn(&Self, usize, usize, i64) -> Result<()>) -> Result<i64> {
        let slot = self
            .free_slots
            .pop()
            .ok_or_else(|| Error::internal("The Sequence slot is full, cannot accept new sequence."))?;
        if let Err(e) = self.each_state(|l, k| fill(self, l, k, slot)) {
            self.free_slots.push(slot);
            return Err(e);
        }
        Ok(slot)
    }

    fn add(&mut self, id: i64) -> Result<()> {
        if self.sequences.contains_key(&id) {
            return Err(Error::internal(format!("The sequence \"{id}\" is already in the space state storage.")));
        }
        let slot =
            self.new_slot(|s, l, k, slot| copy_from_to(s.init[k].tensor(), s.place(l, k, slot, 0, 1)?.tensor()))?;
        self.sequences.insert(id, Sequence { slot, length: 0, available_history: 0, history: 0 });
        self.synced = None;
        Ok(())
    }

    fn remove(&mut self, id: i64) -> Result<()> {
        let seq = self.sequence(id)?;
        self.free_slots.push(seq.slot);
        self.sequences.remove(&id);
        self.synced = None;
        Ok(())
    }

    fn fork(&mut self, parent: i64, child: i64) -> Result<()> {
        let from = self.sequences.get(&parent).copied().ok_or_else(|| {
            Error::internal(format!("The parent sequence \"{parent}\" cannot be found in space state storage."))
        })?;
        if self.sequences.contains_key(&child) {
            return Err(Error::internal(format!(
                "The child sequence \"{child}\" is already in the space state storage."
            )));
        }
        let steps = self.max_history;
        let slot = self.new_slot(|s, l, k, slot| {
            copy_from_to(s.place(l, k, from.slot, 0, steps)?.tensor(), s.place(l, k, slot, 0, steps)?.tensor())
        })?;
        self.sequences.insert(child, Sequence { slot, ..from });
        self.synced = None;
        Ok(())
    }

    fn popn(&mut self, id: i64, n: i64) -> Result<()> {
        let mut seq = self
            .sequences
            .get(&id)
            .copied()
            .ok_or_else(|| Error::internal(format!("The sequence \"{id}\" cannot be found in space state.")))?;
        if n < 0 {
            return Err(Error::internal(format!("The length of rolling back {n} cannot be negative.")));
        }
        if n > seq.available_history {
            return Err(Error::internal(format!(
                "The sequence only has {} available history in the space state storage, while the length of rollback is {n} which exceeds the sequence length.",
                seq.available_history
            )));
        }
        seq.length -= n;
        seq.available_history -= n;
        seq.history = (seq.history - n).rem_euclid(self.max_history);
        self.sequences.insert(id, seq);
        self.synced = None;
        Ok(())
    }

    fn begin_forward(&mut self, ids: &[i64], lengths: &[i64], tree: Option<&[i64]>) -> Result<()> {
        if ids.len() != lengths.len() {
            return Err(Error::internal(format!(
                "The seq_ids size ({}) and append_lengths size ({}) mismatch.",
                ids.len(),
                lengths.len()
            )));
        }
        if let Some(parents) = tree {
            let chain = lengths.iter().flat_map(|&n| (0..n).map(|i| i - 1));
            let total: i64 = lengths.iter().sum();
            if parents.len() as i64 != total || !chain.zip(parents).all(|(want, &got)| want == got) {
                return Err(Error::internal(
                    "Unexpected token tree for RNN state. RNN state only supports chains as token trees.",
                ));
            }
        }
        let seqs = ids.iter().map(|&id| self.sequence(id)).collect::<Result<Vec<_>>>()?;
        if seqs.len() as i64 > self.slot_ids.shape()[0] {
            return Err(Error::internal(format!(
                "a batch of {} sequences, for {} reserved",
                seqs.len(),
                self.slot_ids.shape()[0]
            )));
        }
        let int32 = DLDataType::parse("int32")?;
        let fill = |whole: &NDArray, values: Vec<i32>| -> Result<NDArray> {
            let view = whole.create_view(&[values.len() as i64], int32)?;
            view.copy_from_bytes(&values.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>())?;
            Ok(view)
        };
        let slots = fill(&self.slot_ids, seqs.iter().map(|s| s.slot as i32).collect())?;
        let history = fill(&self.history_ids, seqs.iter().map(|s| s.history as i32).collect())?;
        self.batch = ids.iter().copied().zip(lengths.iter().copied()).collect();
        self.synced = Some((slots, history));
        Ok(())
    }

    fn end_forward(&mut self) -> Result<()> {
        for &(id, n) in &self.batch {
            let mut seq = self.sequence(id)?;
            seq.length += n;
            seq.available_history = if n > 1 { 0 } else { (seq.available_history + 1).min(self.max_history - 1) };
            seq.history = (seq.history + 1) % self.max_history;
            self.sequences.insert(id, seq);
        }
        self.synced = None;
        Ok(())
    }

    fn clear(&mut self) {
        self.sequences.clear();
        self.free_slots = (0..self.slot_ids.shape()[0]).rev().collect();
        self.batch.clear();
        self.synced = None;
    }
}

/// `rnn_state_get(state, layer, state_id, o_data)` / `rnn_state_set(state, layer, state_id,
/// data)`: the model's getter or setter of that state, called with the storage and the batch's
/// slot and history indices (outside the state's lock).
fn access(args: Args<'_>, which: &str) -> Result<Value> {
    args.expect_len(4, &format!("vm.builtin.rnn_state_{which}(state, layer_id, state_id, data)"))?;
    let state = state_arg(&args, 0)?;
    let (f, storage, (slots, history)) = {
        let s = state.0.lock();
        let (l, k) = (index(args.int(1)?, s.storages.len())?, index(args.int(2)?, s.init.len())?);
        let synced = s.synced.clone().ok_or_else(|| {
            Error::internal(format!("The auxiliary arrays are not synchronized to device. Please call `BeginForward` to synchronize before calling `{}`.", if which == "get" { "Get" } else { "Set" }))
        })?;
        if s.batch.is_empty() {
            return Err(Error::internal("no sequence in the batch: begin a forward pass with at least one"));
        }
        let f = if which == "get" { &s.f_gets[k] } else { &s.f_sets[k] };
        (f.clone(), s.storages[l][k].clone(), synced)
    };
    let data = args.to_value(3)?;
    f.call(&[Value::NDArray(storage), Value::NDArray(slots), Value::NDArray(history), data])?;
    Ok(if which == "get" { Value::Null } else { Value::Object(state.to_object_ref()) })
}

fn index(i: i64, n: usize) -> Result<usize> {
    usize::try_from(i).ok().filter(|&i| i < n).ok_or_else(|| Error::index(format!("Index {i} out of bounds {n}")))
}

fn debug_get_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(4, "vm.builtin.rnn_state_debug_get(state, layer_id, state_id, seq_id)")?;
    let state = state_arg(&args, 0)?;
    let s = state.0.lock();
    let (l, k) = (index(args.int(1)?, s.storages.len())?, index(args.int(2)?, s.init.len())?);
    let seq = s.sequence(args.int(3)?)?;
    let one = &s.init[k];
    let out = NDArray::empty(one.shape(), one.dtype(), one.device())?;
    let at = s.place(l, k, seq.slot, seq.history, 1)?;
    let at = at.create_view(one.shape(), one.dtype())?;
    copy_from_to(at.tensor(), out.tensor())?;
    Ok(Value::NDArray(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::DLDevice;

    fn f32s(t: &NDArray) -> Vec<f32> {
        t.to_vec_u8().unwrap().chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect()
    }

    fn i32s(t: &NDArray) -> Vec<i32> {
        t.to_vec_u8().unwrap().chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect()
    }

    /// A setter as a model's kernel is: each sequence's new state into its next history slot.
    fn setter(max_history: i64) -> PackedFunc {
        PackedFunc::from_typed(move |a| {
            let (storage, slots, history, data) = (a.ndarray(0)?, a.ndarray(1)?, a.ndarray(2)?, a.ndarray(3)?);
            let (slots, history, data) = (i32s(&slots), i32s(&history), f32s(&data));
            let mut s = f32s(&storage);
            for (k, (&i, &j)) in slots.iter().zip(&history).enumerate() {
                let at = (i as usize * max_history as usize + ((j as i64 + 1) % max_history) as usize) * 2;
                s[at..at + 2].copy_from_slice(&data[k * 2..k * 2 + 2]);
            }
            storage.copy_from_bytes(&s.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>())?;
            Ok(Value::Null)
        })
    }

    // apache-tvm 0.27's runtime, with the same getter and setter, gives the same trace.
    #[test]
    fn decode_steps_pop_back_and_prefills_do_not() {
        let init = NDArray::from_bytes(&[2], DLDataType::parse("float32").unwrap(), &[0u8; 8]).unwrap();
        let unused = PackedFunc::from_typed(|_| Ok(Value::Null));
        let state = create(1, 3, 3, vec![unused], vec![setter(3)], vec![init]).unwrap();
        let mut s = state.0.lock();
        let row = |v: f32| {
            NDArray::from_bytes(
                &[1, 2],
                DLDataType::parse("float32").unwrap(),
                &[v.to_ne_bytes(), v.to_ne_bytes()].concat(),
            )
            .unwrap()
        };
        let current = |s: &State, id: i64| {
            let seq = s.sequence(id).unwrap();
            f32s(&s.place(0, 0, seq.slot, seq.history, 1).unwrap())[0]
        };
        s.add(10).unwrap();
        for (step, value) in [(1, 2.0), (2, 20.0), (3, 30.0), (4, 40.0)] {
            s.begin_forward(&[10], &[1], None).unwrap();
            let (slots, history) = s.synced.clone().unwrap();
            s.f_sets[0]
                .call(&[
                    Value::NDArray(s.storages[0][0].clone()),
                    Value::NDArray(slots),
                    Value::NDArray(history),
                    Value::NDArray(row(value)),
                ])
                .unwrap();
            s.end_forward().unwrap();
            assert_eq!(current(&s, 10), value, "step {step}");
        }
        s.popn(10, 1).unwrap();
        assert_eq!(current(&s, 10), 30.0);
        s.popn(10, 1).unwrap();
        assert_eq!(current(&s, 10), 20.0);
        let e = s.popn(10, 1).unwrap_err();
        assert!(e.message().contains("only has 0 available history"), "{e}");
        s.begin_forward(&[10], &[5], None).unwrap();
        s.end_forward().unwrap();
        assert!(s.popn(10, 1).is_err(), "a prefill cannot be popped back");
        s.fork(10, 30).unwrap();
        assert_eq!(current(&s, 30), current(&s, 10));
        s.add(40).unwrap();
        assert!(s.add(50).unwrap_err().message().contains("slot is full"));
        let e = s.begin_forward(&[10], &[3], Some(&[-1, 0, 0])).unwrap_err();
        assert!(e.message().contains("only supports chains"), "{e}");
        s.begin_forward(&[10], &[3], Some(&[-1, 0, 1])).unwrap();
        assert_eq!(s.slot_ids.device(), DLDevice::cpu(0));
    }
}
