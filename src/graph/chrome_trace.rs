//! The Chrome trace format (`chrome://tracing`, Perfetto): the one writer of the profiler's
//! per-op traces and the pipeline's per-stage traces.
//!
//! A trace is `{"traceEvents":[...],"displayTimeUnit":"ms"}`: first a metadata event naming
//! each lane (a thread row of the viewer), then one complete event (`"ph":"X"`) per timed span,
//! its keys in the order `name`, `cat`, `ph`, `pid`, `tid`, `ts`, `dur`, `args`. Times are
//! microseconds, as the format requires; `displayTimeUnit` only picks the viewer's scale.

use serde::Serialize;
use serde_json::Value;

/// The unit the viewer shows times in (`"ms"` or `"ns"`; the format's default is `"ms"`).
const DISPLAY_TIME_UNIT: &str = "ms";

/// A timed span: `name` on lane `tid`, from `start_ns` (since the trace's origin) for
/// `duration_ns`; `args` is what the viewer shows for it when selected.
pub struct Complete {
    pub name: String,
    pub cat: &'static str,
    pub tid: u64,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub args: Value,
}

/// One entry of `traceEvents`, serialized with its fields in declaration order.
#[derive(Serialize)]
#[serde(untagged)]
enum Event<'a> {
    Lane { name: &'static str, ph: &'static str, pid: u32, tid: u64, args: LaneName<'a> },
    Complete { name: &'a str, cat: &'a str, ph: &'static str, pid: u32, tid: u64, ts: f64, dur: f64, args: &'a Value },
}

#[derive(Serialize)]
struct LaneName<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct Trace<'a> {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<Event<'a>>,
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: &'static str,
}

/// Microseconds, the format's time unit.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// The trace of `spans`, with a name for each lane in `lanes` (`(tid, name)`).
pub fn to_json(lanes: &[(u64, String)], spans: &[Complete]) -> String {
    let named = lanes.iter().map(|(tid, name)| Event::Lane {
        name: "thread_name",
        ph: "M",
        pid: 1,
        tid: *tid,
        args: LaneName { name },
    });
    let timed = spans.iter().map(|s| Event::Complete {
        name: &s.name,
        cat: s.cat,
        ph: "X",
        pid: 1,
        tid: s.tid,
        ts: micros(s.start_ns),
        dur: micros(s.duration_ns),
        args: &s.args,
    });
    let trace = Trace { trace_events: named.chain(timed).collect(), display_time_unit: DISPLAY_TIME_UNIT };
    // Strings, numbers and JSON values only: serializing cannot fail.
    serde_json::to_string(&trace).expect("a trace of plain JSON values serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_then_spans_with_times_in_microseconds() {
        let span = Complete {
            name: "op \"1\"".into(),
            cat: "op",
            tid: 2,
            start_ns: 1500,
            duration_ns: 250,
            args: serde_json::json!({"node_id": 7}),
        };
        let text = to_json(&[(2, "worker".into())], &[span]);
        assert_eq!(
            text,
            concat!(
                r#"{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"worker"}},"#,
                r#"{"name":"op \"1\"","cat":"op","ph":"X","pid":1,"tid":2,"ts":1.5,"dur":0.25,"args":{"node_id":7}}],"#,
                r#""displayTimeUnit":"ms"}"#
            )
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["traceEvents"][1]["name"], "op \"1\"");
    }
}
