//! Trace a pipelined batch of requests and draw it.
//!
//!     cargo run --release --example pipeline_trace [-- OUT_DIR]
//!
//! Builds the benchmark CNN (`Spec::large()` in examples/demo/model.rs), submits 12 requests to a pipeline of two
//! core groups with `trace=1`, and writes `pipeline_trace.json` (Chrome trace: open it in
//! chrome://tracing or ui.perfetto.dev) and `pipeline_trace.svg` (the same lanes drawn as a
//! picture, used in docs/pipeline.md) to OUT_DIR (default: `target/pipeline_trace`).

#[path = "demo/capi.rs"]
mod capi;
#[path = "demo/model.rs"]
mod model;

use capi::{check, tensor, Library};
use std::ffi::{c_char, CStr};
use std::fmt::Write as _;
use std::path::PathBuf;
use tvm_runtime::abi::DLDevice;
use tvm_runtime::ffi::graph_executor::pipeline::*;

/// A traced stage: lane, request, start and duration in microseconds.
type Span = (u64, u64, f64, f64);

/// The trace's lane names (in lane order) and spans.
fn spans(json: &str) -> Result<(Vec<String>, Vec<Span>), String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let events = v["traceEvents"].as_array().ok_or("no traceEvents")?;
    let mut lanes: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| (e["tid"].as_u64().unwrap_or(0), e["args"]["name"].as_str().unwrap_or("").to_string()))
        .collect();
    lanes.sort();
    let spans = events
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let f = |k: &str| e[k].as_f64().unwrap_or(0.0);
            (e["tid"].as_u64().unwrap_or(0), e["args"]["request"].as_u64().unwrap_or(0), f("ts"), f("dur"))
        })
        .collect();
    Ok((lanes.into_iter().map(|(_, n)| n).collect(), spans))
}

/// Lanes as rows, each stage a box coloured by request.
fn svg(lanes: &[String], spans: &[Span]) -> String {
    let t0 = spans.iter().map(|s| s.2).fold(f64::INFINITY, f64::min);
    let t1 = spans.iter().map(|s| s.2 + s.3).fold(0.0, f64::max);
    let (label_w, width, row_h) = (130.0, 900.0, 26.0);
    let x = |t: f64| label_w + (t - t0) / (t1 - t0).max(1.0) * (width - label_w - 10.0);
    let height = row_h * lanes.len() as f64 + 40.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (i, name) in lanes.iter().enumerate() {
        let y = 10.0 + row_h * i as f64;
        let _ = writeln!(s, "<text x=\"4\" y=\"{}\">{name}</text>", y + 16.0);
    }
    for &(tid, request, ts, dur) in spans {
        let y = 10.0 + row_h * tid as f64;
        let hue = (request * 67) % 360;
        let (x0, w) = (x(ts), (x(ts + dur) - x(ts)).max(1.0));
        let _ = writeln!(
            s,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"hsl({hue},60%,60%)\" stroke=\"#333\" stroke-width=\"0.5\"><title>request {request}: {dur:.0} us</title></rect>",
            y + 2.0,
            row_h - 6.0
        );
        if w > 18.0 {
            let _ = writeln!(s, "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{request}</text>", x0 + 3.0, y + 16.0);
        }
    }
    let y = height - 12.0;
    let _ = writeln!(s, "<text x=\"{label_w}\" y=\"{y}\">0 ms</text>");
    let _ = writeln!(s, "<text x=\"{}\" y=\"{y}\" text-anchor=\"end\">{:.1} ms</text>", width - 10.0, (t1 - t0) / 1e3);
    s + "</svg>\n"
}

fn run() -> Result<PathBuf, String> {
    let out_dir =
        std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| model::target_dir().join("pipeline_trace"));
    std::fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
    tvm_runtime::init();
    let spec = model::Spec::large();
    let so = model::build_spec(&spec)?;
    let factory = Library::load(&so)?;
    let dev = DLDevice::cpu(0);
    let mut p = std::ptr::null_mut();
    let opts = c"core_groups=2,threads_per_group=1,in_flight=4,trace=1";
    check(unsafe { TVMPipelineCreate(factory.handle(), &dev, 1, opts.as_ptr(), &mut p) }, "create")?;
    let (mut xs, mut ys) = (spec.input_shape().to_vec(), spec.output_shape().to_vec());
    let (n_in, n_out) = (xs.iter().product::<i64>() as usize, ys.iter().product::<i64>() as usize);
    let mut bufs: Vec<(Vec<f32>, Vec<f32>)> =
        (0..12).map(|k| (vec![0.01 * k as f32; n_in], vec![0.0; n_out])).collect();
    let mut ids = Vec::new();
    for (x, y) in bufs.iter_mut() {
        let (xi, mut yo) = (tensor(x.as_mut_ptr(), &mut xs), tensor(y.as_mut_ptr(), &mut ys));
        let mut id = 0;
        check(unsafe { TVMPipelineSubmit(p, &xi, 1, &mut yo, 1, &mut id) }, "submit")?;
        ids.push(id);
    }
    for id in ids {
        check(unsafe { TVMPipelineWait(p, id) }, "wait")?;
    }
    let mut json: *const c_char = std::ptr::null();
    check(unsafe { TVMPipelineGetTrace(p, &mut json) }, "trace")?;
    // SAFETY: the runtime keeps the string until this thread's next `TVMPipelineGetTrace`.
    let json = unsafe { CStr::from_ptr(json) }.to_string_lossy().into_owned();
    check(unsafe { TVMPipelineFree(p) }, "free")?;
    std::fs::write(out_dir.join("pipeline_trace.json"), &json).map_err(|e| e.to_string())?;
    let (lanes, spans) = spans(&json)?;
    std::fs::write(out_dir.join("pipeline_trace.svg"), svg(&lanes, &spans)).map_err(|e| e.to_string())?;
    Ok(out_dir)
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(dir) => {
            println!("wrote {0}/pipeline_trace.json and {0}/pipeline_trace.svg", dir.display());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
