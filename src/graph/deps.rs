//! The dependency graph of a plan's ops: which op must finish before which may start, so that
//! any order respecting it gives the sequential order's results bit for bit.
//!
//! Walking the ops in run order with, per storage id, its last writer and the readers since:
//! a read waits for the last writer of its storage (read-after-write: a *data* edge when it
//! reads the very entry written, a *storage* edge otherwise); a write waits for the last writer
//! (write-after-write) and every reader since (write-after-read), the hazards TVM's storage
//! sharing adds.

//! The plan builds its graphs from here (`Plan::op_graph`, `Plan::task_graph`): this file
//! knows ops only as indices with the storage slots they read and write.

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

#[derive(Default, Clone)]
struct SlotHistory {
    /// Last writer and the entry it wrote.
    writer: Option<(u32, u32)>,
    readers: Vec<u32>,
}

impl OpGraph {
    /// The graph of `n` ops in run order over `n_slots` storage slots; `io(i)` gives the entries
    /// op `i` reads and writes, `sid(entry)` an entry's slot.
    pub fn new<'a>(
        n: usize,
        n_slots: usize,
        io: impl Fn(usize) -> (&'a [u32], &'a [u32]),
        sid: impl Fn(u32) -> usize,
    ) -> OpGraph {
        let mut slots: Vec<SlotHistory> = vec![SlotHistory::default(); n_slots];
        let mut g = OpGraph { preds: vec![Vec::new(); n], succs: vec![Vec::new(); n], edges: Vec::new() };
        for i in 0..n as u32 {
            let (reads, writes) = io(i as usize);
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

    /// The schedule as Graphviz dot: one box per op (named by `op_name`, grouped by level),
    /// solid edges for data, dashed red edges for storage hazards, the critical path in bold.
    pub fn to_dot(&self, op_name: impl Fn(usize) -> String) -> String {
        let levels = self.levels();
        let critical = self.critical_path();
        let on_path = |a: u32, b: u32| critical.windows(2).any(|w| w[0] == a && w[1] == b);
        let name = |i: usize| op_name(i).replace('"', "\\\"");
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

/// Ops grouped into chains, and the dependencies between the chains.
#[derive(Debug)]
pub struct TaskGraph {
    /// Op indices of each task, in run order.
    pub tasks: Vec<Vec<u32>>,
    /// Per op: the other tasks that wait for it (each once).
    pub released_by: Vec<Vec<u32>>,
    /// Per task: how many (op, task) releases it waits for.
    pub n_preds: Vec<u32>,
}

impl TaskGraph {
    pub fn new(g: &OpGraph) -> TaskGraph {
        let n = g.len();
        let mut task_of = vec![u32::MAX; n];
        let mut tasks: Vec<Vec<u32>> = Vec::new();
        for i in 0..n {
            // Appending keeps the task in run order and adds no dependency from outside it.
            let latest = g.preds[i].iter().max().copied();
            let joins = latest.map(|p| task_of[p as usize]).filter(|&t| {
                tasks[t as usize].last().copied() == latest && g.preds[i].iter().all(|&q| task_of[q as usize] == t)
            });
            match joins {
                Some(t) => {
                    tasks[t as usize].push(i as u32);
                    task_of[i] = t;
                }
                None => {
                    task_of[i] = tasks.len() as u32;
                    tasks.push(vec![i as u32]);
                }
            }
        }
        let mut released_by: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut n_preds = vec![0u32; tasks.len()];
        for (op, waiting) in released_by.iter_mut().enumerate() {
            for &s in &g.succs[op] {
                let st = task_of[s as usize];
                if st != task_of[op] && !waiting.contains(&st) {
                    waiting.push(st);
                    n_preds[st as usize] += 1;
                }
            }
        }
        TaskGraph { tasks, released_by, n_preds }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op_graph(n: usize, edges: &[(u32, u32)]) -> OpGraph {
        let mut g = OpGraph { preds: vec![Vec::new(); n], succs: vec![Vec::new(); n], edges: Vec::new() };
        for &(a, b) in edges {
            g.preds[b as usize].push(a);
            g.succs[a as usize].push(b);
            g.edges.push((a, b, EdgeKind::Data));
        }
        g
    }

    #[test]
    fn a_chain_with_storage_hazards_is_one_task() {
        // Ping-pong buffers: op i waits for i-1 (data) and i-2 (write-after-write).
        let edges: Vec<(u32, u32)> = (1..6).map(|i| (i - 1, i)).chain((2..6).map(|i| (i - 2, i))).collect();
        let t = TaskGraph::new(&op_graph(6, &edges));
        assert_eq!(t.tasks, vec![vec![0, 1, 2, 3, 4, 5]]);
    }

    #[test]
    fn branches_are_separate_tasks_joined_by_a_third() {
        // 0 -> {1, 2}; 1 -> 3; 2 -> 4; {3, 4} -> 5
        let t = TaskGraph::new(&op_graph(6, &[(0, 1), (0, 2), (1, 3), (2, 4), (3, 5), (4, 5)]));
        assert_eq!(t.tasks, vec![vec![0, 1, 3], vec![2, 4], vec![5]]);
        assert_eq!(t.n_preds, vec![0, 1, 2]);
        // The second branch waits for op 0 only, not for the whole first task.
        assert_eq!(t.released_by, vec![vec![1], vec![], vec![], vec![2], vec![2], vec![]]);
    }
}
