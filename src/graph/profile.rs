//! Profiling an executor: per-op timings of a run, shown as a text table or a Chrome trace, and
//! TVM's debug-executor `run_individual` encoding.

use super::chrome_trace::{to_json, Complete};
use super::executor::Executor;
use super::runner::{run_profiled, OpTiming, Sequential};
use crate::runtime::base::error::Result;
use std::collections::HashMap;
use std::time::Instant;

/// Each op's median time over several profiled runs (one run the machine preempted or a cache
/// went cold in moves a mean, or a single run's table, but not a median), in the first run's op
/// order, with the first run's start times and lanes. Empty for no runs.
pub fn median_timings(runs: &[Vec<OpTiming>]) -> Vec<OpTiming> {
    let Some(first) = runs.first() else { return Vec::new() };
    let mut times: HashMap<u32, Vec<u64>> = HashMap::new();
    for t in runs.iter().flatten() {
        times.entry(t.node_id).or_default().push(t.duration_ns);
    }
    first
        .iter()
        .map(|t| {
            let ns = times.get_mut(&t.node_id).expect("every op of the first run was counted");
            ns.sort_unstable();
            OpTiming { duration_ns: ns[ns.len() / 2], ..t.clone() }
        })
        .collect()
}

/// Per-op timings as a Chrome trace (`chrome://tracing` / Perfetto JSON), one lane (thread row)
/// per worker.
pub fn chrome_trace(timings: &[OpTiming]) -> String {
    let mut lanes: Vec<u32> = timings.iter().map(|t| t.lane).collect();
    lanes.sort_unstable();
    lanes.dedup();
    // Lanes are named when there are several (a sequential trace is just its ops).
    let named = if lanes.len() > 1 { lanes.as_slice() } else { &[] };
    let names: Vec<(u64, String)> = named
        .iter()
        .map(|&l| (u64::from(l) + 1, if l == 0 { "caller".to_string() } else { format!("inter-op worker {l}") }))
        .collect();
    let ops: Vec<Complete> = timings
        .iter()
        .map(|t| Complete {
            name: t.name.clone(),
            cat: "op",
            tid: u64::from(t.lane) + 1,
            start_ns: t.start_ns,
            duration_ns: t.duration_ns,
            args: serde_json::json!({"func_name": t.func_name, "node_id": t.node_id}),
        })
        .collect();
    to_json(&names, &ops)
}

/// A per-op table: node, function, time, share of the total.
pub fn profile_table(timings: &[OpTiming]) -> String {
    let total: u64 = timings.iter().map(|t| t.duration_ns).sum::<u64>().max(1);
    let mut s = format!("{:<6} {:<48} {:>12} {:>7}\n", "node", "name", "time (us)", "%");
    for t in timings {
        s += &format!(
            "{:<6} {:<48} {:>12.3} {:>7.2}\n",
            t.node_id,
            t.name,
            t.duration_ns as f64 / 1000.0,
            100.0 * t.duration_ns as f64 / total as f64
        );
    }
    s += &format!("total {:.3} us over {} ops\n", total as f64 / 1000.0, timings.len());
    s
}

/// `run_individual`: for every node, `repeat` mean seconds per run over `number` runs
/// (0 for input nodes), as TVM's debug executor encodes them: i64 node count, then f64s.
pub fn run_individual(e: &mut Executor, number: usize, repeat: usize, min_repeat_ms: f64) -> Result<Vec<u8>> {
    let n_nodes = e.plan().graph.nodes.len();
    let batches =
        (0..repeat).map(|_| timed_batch(e, number.max(1), min_repeat_ms, n_nodes)).collect::<Result<Vec<_>>>()?;
    let mut out = Vec::with_capacity(8 + n_nodes * repeat * 8);
    out.extend_from_slice(&(n_nodes as i64).to_le_bytes());
    for nid in 0..n_nodes {
        for (sums, number) in &batches {
            let mean_s = sums[nid] as f64 / 1e9 / *number as f64;
            out.extend_from_slice(&mean_s.to_le_bytes());
        }
    }
    Ok(out)
}

/// Per-node nanoseconds summed over `number` profiled runs, `number` growing until the batch
/// lasts `min_repeat_ms`; returns the sums and the `number` they cover.
fn timed_batch(e: &mut Executor, mut number: usize, min_repeat_ms: f64, n_nodes: usize) -> Result<(Vec<u64>, usize)> {
    loop {
        let mut sums = vec![0u64; n_nodes];
        let t0 = Instant::now();
        for _ in 0..number {
            for t in run_profiled(&Sequential::default(), e)? {
                sums[t.node_id as usize] += t.duration_ns;
            }
        }
        let elapsed_ms = t0.elapsed().as_secs_f64() * 1e3;
        if elapsed_ms >= min_repeat_ms || number >= 1 << 20 {
            return Ok((sums, number));
        }
        number = (number * 2).max(((min_repeat_ms / elapsed_ms.max(1e-3)) * number as f64) as usize + 1);
    }
}

/// The timings as the JSON of TVM's profiling report (`Report::AsJSON`, what a debug
/// executor's `profile_rpc` returns): one call per op with its name, duration, count and
/// device, the device's total, and the executor kind.
pub fn report_json(timings: &[OpTiming]) -> String {
    let calls: Vec<serde_json::Value> = timings
        .iter()
        .map(|t| {
            serde_json::json!({
                "Name": {"string": t.func_name},
                "Duration (us)": {"microseconds": t.duration_ns as f64 / 1e3},
                "Count": {"count": 1},
                "Device": {"string": "cpu0"},
                "Node": {"string": t.name},
            })
        })
        .collect();
    let total_us = timings.iter().map(|t| t.duration_ns).sum::<u64>() as f64 / 1e3;
    serde_json::json!({
        "calls": calls,
        "device_metrics": {"cpu0": {"Name": {"string": "Total"}, "Duration (us)": {"microseconds": total_us}, "Count": {"count": 1}}},
        "configuration": {"Executor": {"string": "Graph"}},
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(node_id: u32, duration_ns: u64, start_ns: u64) -> OpTiming {
        OpTiming {
            node_id,
            name: format!("op{node_id}"),
            func_name: format!("k{node_id}"),
            start_ns,
            duration_ns,
            lane: 0,
        }
    }

    #[test]
    fn median_of_each_op_over_runs() {
        // Node 3 ran first in the first run; one run of node 1 was preempted (5 ms).
        let runs = vec![
            vec![op(3, 40, 0), op(1, 10, 40)],
            vec![op(1, 5_000_000, 0), op(3, 20, 5_000_000)],
            vec![op(3, 30, 0), op(1, 12, 30)],
        ];
        let m = median_timings(&runs);
        let got: Vec<(u32, u64, u64)> = m.iter().map(|t| (t.node_id, t.duration_ns, t.start_ns)).collect();
        assert_eq!(got, vec![(3, 30, 0), (1, 12, 40)]);
        assert_eq!(m[1].name, "op1");
        assert!(median_timings(&[]).is_empty());
        let one = median_timings(&runs[..1]);
        assert_eq!(one.iter().map(|t| t.duration_ns).collect::<Vec<_>>(), vec![40, 10]);
    }
}
