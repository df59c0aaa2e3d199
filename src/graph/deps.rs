//! The dependency graph of a plan's ops: which op must finish before which may start, so that
//! any order respecting it gives the sequential order's results bit for bit.
//!
//! Walking the ops in run order with, per storage id, its last writer and the readers since:
//! a read waits for the last writer of its storage (read-after-write: a *data* edge when it
//! reads the very entry written, a *storage* edge otherwise); a write waits for the last writer
//! (write-after-write) and every reader since (write-after-read), the hazards TVM's storage
//! sharing adds.

use super::plan::Plan;

/// Why one op waits for another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeKind {
    /// The later op reads an entry the earlier one wrote.
    Data,
    /// The ops touch different entries that share a storage id (a reuse hazard).
    Storage,
}

/// Ops (by index in run order) and the edges between them; edges go from earlier to later ops.
#[derive(Clone, Debug)]
pub struct OpGraph {
    pub preds: Vec<Vec<u32>>,
    pub succs: Vec<Vec<u32>>,
    /// Every edge once: (from, to, kind).
    pub edges: Vec<(u32, u32, EdgeKind)>,
}

/// What op `i` reads and writes, as entry ids.
pub(crate) fn op_io(plan: &Plan, i: usize) -> (&[u32], &[u32]) {
    let op = &plan.ops[i];
    let n_in = plan.graph.nodes[op.node_id as usize].inputs.len();
    op.args.split_at(n_in)
}

#[derive(Default, Clone)]
struct SlotHistory {
    /// Last writer and the entry it wrote.
    writer: Option<(u32, u32)>,
    readers: Vec<u32>,
}

impl OpGraph {
    pub fn new(plan: &Plan) -> OpGraph {
        let n = plan.ops.len();
        let sid = |eid: u32| plan.graph.attrs.storage_id[eid as usize] as usize;
        let mut slots: Vec<SlotHistory> = vec![SlotHistory::default(); plan.storage.len()];
        let mut g = OpGraph { preds: vec![Vec::new(); n], succs: vec![Vec::new(); n], edges: Vec::new() };
        for i in 0..n as u32 {
            let (reads, writes) = op_io(plan, i as usize);
            for &e in reads {
                if let Some((w, we)) = slots[sid(e)].writer {
                    g.add(w, i, if we == e { EdgeKind::Data } else { EdgeKind::Storage });
                }
            }
            for &e in writes {
                let s = &slots[sid(e)];
                let before: Vec<u32> = s.writer.map(|(w, _)| w).into_iter().chain(s.readers.iter().copied()).collect();
                for w in before {
                    g.add(w, i, EdgeKind::Storage);
                }
            }
            for &e in reads {
                slots[sid(e)].readers.push(i);
            }
            for &e in writes {
                slots[sid(e)] = SlotHistory { writer: Some((i, e)), readers: Vec::new() };
            }
        }
        g
    }

    /// Add `from → to` unless it is a self-edge or already there (a data edge wins over a
    /// storage edge between the same ops).
    fn add(&mut self, from: u32, to: u32, kind: EdgeKind) {
        if from == to {
            return;
        }
        if let Some(edge) =
            self.edges.iter_mut().rev().take(self.preds[to as usize].len()).find(|e| e.0 == from && e.1 == to)
        {
            if kind == EdgeKind::Data {
                edge.2 = EdgeKind::Data;
            }
            return;
        }
        self.preds[to as usize].push(from);
        self.succs[from as usize].push(to);
        self.edges.push((from, to, kind));
    }

    pub fn len(&self) -> usize {
        self.preds.len()
    }
    pub fn is_empty(&self) -> bool {
        self.preds.is_empty()
    }

    /// Level of each op: 0 for ops with no predecessor, else one more than the deepest
    /// predecessor. Ops of one level are independent of each other.
    pub fn levels(&self) -> Vec<u32> {
        let mut level = vec![0u32; self.len()];
        for i in 0..self.len() {
            level[i] = self.preds[i].iter().map(|&p| level[p as usize] + 1).max().unwrap_or(0);
        }
        level
    }

    /// The longest chain of dependent ops (by op count), earliest first.
    pub fn critical_path(&self) -> Vec<u32> {
        let mut best: Vec<(u32, Option<u32>)> = vec![(1, None); self.len()];
        for i in 0..self.len() {
            if let Some(&p) = self.preds[i].iter().max_by_key(|&&p| best[p as usize].0) {
                best[i] = (best[p as usize].0 + 1, Some(p));
            }
        }
        let Some(mut at) = (0..self.len()).max_by_key(|&i| best[i].0) else { return Vec::new() };
        let mut path = vec![at as u32];
        while let Some(p) = best[at].1 {
            path.push(p);
            at = p as usize;
        }
        path.reverse();
        path
    }

    /// The schedule as Graphviz dot: one box per op (named by its node, grouped by level),
    /// solid edges for data, dashed red edges for storage hazards, the critical path in bold.
    pub fn to_dot(&self, plan: &Plan) -> String {
        let levels = self.levels();
        let critical = self.critical_path();
        let on_path = |a: u32, b: u32| critical.windows(2).any(|w| w[0] == a && w[1] == b);
        let name = |i: usize| plan.graph.nodes[plan.ops[i].node_id as usize].name.replace('"', "\\\"");
        let mut s = String::from("digraph schedule {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
        for level in 0..=levels.iter().copied().max().unwrap_or(0) {
            s += &format!("  subgraph level_{level} {{ rank=same;");
            for (i, _) in levels.iter().enumerate().filter(|(_, &l)| l == level) {
                let bold = if critical.contains(&(i as u32)) { ", style=bold" } else { "" };
                s += &format!(" op{i} [label=\"{}\\nlevel {level}\"{bold}];", name(i));
            }
            s += " }\n";
        }
        for &(a, b, kind) in &self.edges {
            let style = match kind {
                EdgeKind::Data => "",
                EdgeKind::Storage => "style=dashed, color=red, label=\"storage\"",
            };
            let bold = if on_path(a, b) { "penwidth=2" } else { "" };
            let attrs: Vec<&str> = [style, bold].into_iter().filter(|x| !x.is_empty()).collect();
            s += &format!("  op{a} -> op{b} [{}];\n", attrs.join(", "));
        }
        s + "}\n"
    }
}
