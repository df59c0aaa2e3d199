//! A storage plan for parallel runs. TVM's plan lets independent branches share buffers, which
//! orders them one after the other (see `deps.rs`). This plan lets an op reuse a buffer only when
//! every op that touched the buffer's earlier entries is one of its data ancestors, so it adds
//! no ordering beyond the data dependencies, at the cost of some bytes.

use super::json::Graph;
use super::options::MemoryPlan;
use super::plan::{OpKind, Plan};
use crate::abi::DLDevice;
use crate::runtime::base::error::Result;
use crate::runtime::function::packed::Module;
use std::collections::HashMap;

/// A set of op indices as a bitset.
#[derive(Clone)]
struct OpSet(Vec<u64>);

impl OpSet {
    fn new(n: usize) -> OpSet {
        OpSet(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, i: u32) {
        self.0[i as usize / 64] |= 1 << (i % 64);
    }
    fn contains(&self, i: u32) -> bool {
        self.0[i as usize / 64] & (1 << (i % 64)) != 0
    }
    fn union_with(&mut self, other: &OpSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
}

/// Data ancestors of every op: the ops whose outputs it reads, transitively.
fn data_ancestors(plan: &Plan, producer: &[Option<u32>]) -> Vec<OpSet> {
    let n = plan.ops.len();
    let mut anc: Vec<OpSet> = Vec::with_capacity(n);
    for i in 0..n {
        let mut set = OpSet::new(n);
        for &e in plan.op_io(i).0 {
            if let Some(p) = producer[e as usize] {
                set.union_with(&anc[p as usize]);
                set.insert(p);
            }
        }
        anc.push(set);
    }
    anc
}

struct Slot {
    bytes: usize,
    device_type: i32,
    /// Every op that writes or reads an entry placed here.
    users: Vec<u32>,
    /// Holds a graph input or output, whose value must outlive the run: never reused.
    pinned: bool,
}

/// Storage ids (one per entry) under which only data-ordered ops share memory.
pub fn parallel_storage_ids(plan: &Plan) -> Vec<u32> {
    let graph = &plan.graph;
    let n_entries = graph.num_entries();
    let mut producer: Vec<Option<u32>> = vec![None; n_entries];
    let mut readers: Vec<Vec<u32>> = vec![Vec::new(); n_entries];
    for i in 0..plan.ops.len() {
        let (reads, writes) = plan.op_io(i);
        reads.iter().for_each(|&e| readers[e as usize].push(i as u32));
        writes.iter().for_each(|&e| producer[e as usize] = Some(i as u32));
    }
    let anc = data_ancestors(plan, &producer);
    let mut pinned = vec![false; n_entries];
    graph.heads.iter().for_each(|h| pinned[graph.entry_of(*h)] = true);
    let mut ids = vec![u32::MAX; n_entries];
    let mut slots: Vec<Slot> = Vec::new();
    // Inputs keep the grouping TVM gave them, in slots of their own.
    let mut input_slot: HashMap<u32, u32> = HashMap::new();
    for &nid in &graph.arg_nodes {
        let e = graph.entry_id(nid, 0);
        let s = *input_slot.entry(graph.attrs.storage_id[e]).or_insert_with(|| {
            slots.push(Slot {
                bytes: 0,
                device_type: plan.entry_device[e].device_type,
                users: Vec::new(),
                pinned: true,
            });
            slots.len() as u32 - 1
        });
        place(&mut slots[s as usize], plan.entry_bytes(e), &readers[e], None);
        ids[e] = s;
    }
    for (i, ancestors) in anc.iter().enumerate() {
        let (reads, writes) = plan.op_io(i);
        for &e in writes {
            let e = e as usize;
            let s = match plan.ops[i].kind {
                // `__nop` writes nothing: its output is its input's memory.
                OpKind::Nop if !reads.is_empty() => ids[reads[0] as usize],
                _ => pick_slot(&mut slots, plan.entry_bytes(e), plan.entry_device[e].device_type, ancestors),
            };
            place(&mut slots[s as usize], plan.entry_bytes(e), &readers[e], Some(i as u32));
            slots[s as usize].pinned |= pinned[e];
            ids[e] = s;
        }
    }
    ids
}

fn place(slot: &mut Slot, bytes: usize, readers: &[u32], writer: Option<u32>) {
    slot.bytes = slot.bytes.max(bytes);
    slot.users.extend(writer.into_iter().chain(readers.iter().copied()));
}

/// A free slot every user of which is an ancestor of the writing op (best fit by size), or a
/// new one.
fn pick_slot(slots: &mut Vec<Slot>, bytes: usize, device_type: i32, ancestors: &OpSet) -> u32 {
    let fits = |s: &Slot| !s.pinned && s.device_type == device_type && s.users.iter().all(|&u| ancestors.contains(u));
    let best = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| fits(s))
        .min_by_key(|(_, s)| if s.bytes >= bytes { (0, s.bytes - bytes) } else { (1, bytes - s.bytes) })
        .map(|(i, _)| i as u32);
    best.unwrap_or_else(|| {
        slots.push(Slot { bytes: 0, device_type, users: Vec::new(), pinned: false });
        slots.len() as u32 - 1
    })
}

/// A plan of `graph` over `module`'s kernels with the storage plan asked for (no weights
/// attached).
pub fn build_plan(graph: Graph, module: Module, devices: &[DLDevice], memory: MemoryPlan) -> Result<Plan> {
    let plan = Plan::new(graph, module, devices)?;
    match memory {
        MemoryPlan::Tvm => Ok(plan),
        MemoryPlan::Parallel => parallel_plan(&plan),
    }
}

/// `plan`'s graph and kernels with the parallel storage plan (no weights attached).
pub fn parallel_plan(plan: &Plan) -> Result<Plan> {
    let mut graph = plan.graph.clone();
    graph.attrs.storage_id = parallel_storage_ids(plan);
    Plan::new(graph, plan.module.clone(), &plan.devices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_sets() {
        let mut a = OpSet::new(130);
        a.insert(3);
        a.insert(129);
        let mut b = OpSet::new(130);
        b.insert(64);
        b.union_with(&a);
        assert!(b.contains(3) && b.contains(64) && b.contains(129) && !b.contains(4));
    }
}
