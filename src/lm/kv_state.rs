//! `relax.vm.KVState`: what the RNN state ([`super::rnn_state`]) and the paged KV cache
//! ([`super::paged_kv_cache`]) both are, and the `vm.builtin.kv_state_*` calls on either: add,
//! remove, fork and pop sequences, begin and end a forward pass, clear.

use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::header::{ObjPtr, ObjectRef, ObjectType};
use crate::runtime::object::type_table::type_key_of;
use crate::runtime::object::type_table::{register_type, type_index as ti};
use std::sync::OnceLock;

/// TVM's type key of the interface.
pub const KEY: &str = "relax.vm.KVState";

/// A state of many sequences a model steps through forward passes.
pub(super) trait KvState {
    fn add(&self, id: i64) -> Result<()>;
    fn remove(&self, id: i64) -> Result<()>;
    /// `child` as a copy of `parent`'s first `pos` tokens (-1: all of them).
    fn fork(&self, parent: i64, child: i64, pos: i64) -> Result<()>;
    fn popn(&self, id: i64, n: i64) -> Result<()>;
    /// A pass appending `lengths[i]` tokens to sequence `ids[i]`; `tree` gives each new token's
    /// parent when they form token trees.
    fn begin_forward(&self, ids: &[i64], lengths: &[i64], tree: Option<&[i64]>) -> Result<()>;
    fn end_forward(&self) -> Result<()>;
    fn clear(&self) -> Result<()>;
}

/// The type index of a kind of state: `key` under `interface` under [`KEY`], registered once
/// (into `cell`).
pub(super) fn type_index(cell: &'static OnceLock<u32>, interface: &str, key: &str) -> Result<u32> {
    if let Some(&i) = cell.get() {
        return Ok(i);
    }
    let kv_state = register_type(KEY, ti::ROOT)?;
    let i = register_type(key, register_type(interface, kv_state)?)?;
    Ok(*cell.get_or_init(|| i))
}

/// `o` as a state of payload `T`, if it is one made here at `index`.
///
/// # Safety
/// Every object this runtime makes at `index` must have payload `T`.
pub(super) unsafe fn state_of<T: ObjectType>(o: &ObjectRef, index: u32) -> Option<ObjPtr<T>> {
    if o.type_index() != index || !o.made_here() {
        return None;
    }
    // SAFETY: made here at `index`, so with payload `T` (the caller's contract).
    Some(unsafe { ObjPtr::from_borrowed(o.as_header()) })
}

/// `body` on `state` if there is one; whether there was ([`Resolver`]s are made of this).
pub(super) fn run_on<T: KvState + ObjectType>(
    state: Option<ObjPtr<T>>,
    body: &mut dyn FnMut(&dyn KvState) -> Result<()>,
) -> Result<bool> {
    let Some(s) = state else { return Ok(false) };
    body(&*s)?;
    Ok(true)
}

/// Runs a body on an object if it is one kind of state (made here); whether it was.
pub(super) type Resolver = fn(&ObjectRef, &mut dyn FnMut(&dyn KvState) -> Result<()>) -> Result<bool>;

/// `body` on the state in argument 0 of `n` arguments, whichever of `kinds` it is.
fn on(
    kinds: &[Resolver],
    args: Args<'_>,
    n: usize,
    body: impl Fn(&dyn KvState, &Args<'_>) -> Result<()>,
) -> Result<Value> {
    if args.len() != n {
        return Err(Error::type_error(format!("Expected {n} but got {} arguments", args.len())));
    }
    let o = args.object(0)?;
    for kind in kinds {
        if kind(&o, &mut |s| body(s, &args))? {
            return Ok(Value::Null);
        }
    }
    let got = type_key_of(o.type_index());
    Err(Error::type_error(format!("argument 0: expected a {KEY} (an RNN state or a paged KV cache), got {got}")))
}

/// The calls, on any of `kinds` of state.
pub(super) fn globals(kinds: &'static [Resolver]) -> Vec<(&'static str, PackedFunc)> {
    type Body = fn(&dyn KvState, &Args<'_>) -> Result<()>;
    let f = move |name, n: usize, body: Body| (name, PackedFunc::from_typed(move |a| on(kinds, a, n, body)));
    vec![
        f("vm.builtin.kv_state_add_sequence", 2, |s, a| s.add(a.int(1)?)),
        f("vm.builtin.kv_state_remove_sequence", 2, |s, a| s.remove(a.int(1)?)),
        f("vm.builtin.kv_state_fork_sequence", 4, |s, a| s.fork(a.int(1)?, a.int(2)?, a.int(3)?)),
        f("vm.builtin.kv_state_popn", 3, |s, a| s.popn(a.int(1)?, a.int(2)?)),
        f("vm.builtin.kv_state_end_forward", 1, |s, _| s.end_forward()),
        f("vm.builtin.kv_state_clear", 1, |s, _| s.clear()),
        ("vm.builtin.kv_state_begin_forward", PackedFunc::from_typed(move |a| begin_forward(kinds, a))),
    ]
}

fn begin_forward(kinds: &[Resolver], args: Args<'_>) -> Result<Value> {
    if !(3..=4).contains(&args.len()) {
        return Err(Error::internal("KVState BeginForward only accepts 3 or 4 arguments"));
    }
    let tree = match args.len() {
        4 if !matches!(args.to_value(3)?, Value::Null) => Some(super::args::shape_arg(&args, 3)?),
        _ => None,
    };
    let (ids, lengths) = (super::args::shape_arg(&args, 1)?, super::args::shape_arg(&args, 2)?);
    let n = args.len();
    on(kinds, args, n, |s, _| s.begin_forward(&ids, &lengths, tree.as_deref()))
}
