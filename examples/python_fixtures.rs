//! Models and expected numbers for the Python package's tests and benchmark (`python/`).
//!
//!     cargo run --release --example python_fixtures [-- --bench N]
//!
//! Builds into `target/demo/`: the demo model at batch 1, 2, 4 and 8 (`demo_model.so`,
//! `demo_b2_model.so`, ...) with a bucket manifest listing them (`demo.buckets`), and a tiny
//! model (`tiny_model.so`: a [1, 1, 2, 2] input -> dense(2) -> softmax) for overhead measurements,
//! and `Spec::large()` (`cnn_model.so`, tens of milliseconds per run) for the GIL test.
//! Writes `python_fixtures.json`: the paths, and for a few seeds the demo's input image and the
//! outputs the C API gives for it (as float32 bit patterns, so the comparison is exact) and
//! the pure-Rust reference's.
//!
//! `--wide`: builds only the serving benchmark's model (`wide_model.so`, `wide_b2_model.so`, ...
//! and `wide.buckets`) and prints the manifest's path.
//!
//! `--seq-grid`: builds only the Triton backend's ragged-batching model: the sequence block
//! (`demo/seq_model.rs`) at batch 1, 2 and 4 by length 4 and 8 (`seqgrid_s4_model.so`,
//! `seqgrid_b2_s4_model.so`, ... and `seqgrid.buckets`), and writes `seq_grid.json`: the
//! manifest's path and, for sequences of several lengths, the tokens and the outputs (float32
//! bit patterns) the C API gives for each alone, on the version built for exactly its length.
//!
//! `--bench N`: times N iterations of `set_input + run + get_output` on the tiny model through
//! the C API (the loop the Python benchmark compares with) and prints the median of 5 samples
//! in microseconds per iteration.

#[path = "demo/capi.rs"]
mod capi;
#[path = "demo/model.rs"]
mod model;
#[path = "demo/seq_model.rs"]
mod seq_model;

use model::Spec;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

const BATCHES: [usize; 4] = [1, 2, 4, 8];
const SEEDS: [u64; 4] = [0, 1, 2, 3];

/// The tiny model: one input `data` of shape [1, 1, 2, 2], dense(2) + softmax.
fn tiny() -> Spec {
    Spec {
        name: "tiny".into(),
        batch: 1,
        channels: 1,
        height: 2,
        width: 2,
        stages: vec![],
        num_classes: 2,
        weight_seed: 7,
    }
}

/// The serving benchmark's model (`--wide`): a [1, 1, 64, 64] input -> dense(512) + softmax, 8 MB
/// of weights, about a millisecond a run: a batch of 8 costs far less than 8 runs of one.
fn wide() -> Spec {
    Spec {
        name: "wide".into(),
        batch: 1,
        channels: 1,
        height: 64,
        width: 64,
        stages: vec![],
        num_classes: 512,
        weight_seed: 11,
    }
}

/// Build `spec` at each of `BATCHES` and a manifest `<name>.buckets` listing the versions.
fn build_buckets(spec: &Spec) -> Result<(Vec<std::path::PathBuf>, std::path::PathBuf), String> {
    let mut versions = Vec::new();
    for b in BATCHES {
        versions.push(model::build_spec(&spec.with_batch(b))?);
    }
    let dir = versions[0].parent().ok_or("the model has no directory")?.to_path_buf();
    let manifest = dir.join(format!("{}.buckets", spec.name));
    let mut text = format!("# the {} model at batch 1, 2, 4 and 8 (examples/python_fixtures.rs)\n", spec.name);
    for v in &versions {
        writeln!(text, "{}", v.file_name().unwrap().to_string_lossy()).unwrap();
    }
    model::write_atomic(&manifest, text.as_bytes()).map_err(|e| format!("{}: {e}", manifest.display()))?;
    Ok((versions, manifest))
}

fn json_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn bits(v: &[f32]) -> String {
    let items: Vec<String> = v.iter().map(|x| x.to_bits().to_string()).collect();
    format!("[{}]", items.join(", "))
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let bench = match args.iter().position(|a| a == "--bench") {
        Some(i) => Some(args.get(i + 1).and_then(|v| v.parse::<usize>().ok()).ok_or("--bench needs a count")?),
        None => None,
    };
    if args.iter().any(|a| a == "--seq-grid") {
        return seq_grid();
    }

    let tiny_spec = tiny();
    let tiny_so = model::build_spec(&tiny_spec)?;
    if let Some(n) = bench {
        return bench_tiny(&tiny_so, &tiny_spec, n.max(1));
    }

    if args.iter().any(|a| a == "--wide") {
        let (_, manifest) = build_buckets(&wide())?;
        println!("{}", manifest.display());
        return Ok(());
    }
    let (versions, manifest) = build_buckets(&Spec::demo())?;
    let dir = versions[0].parent().ok_or("demo model has no directory")?.to_path_buf();

    // A model long enough per run (tens of ms) to show Python threads running during it.
    let large = model::build_spec(&Spec::large())?;

    let lib = capi::Library::load(&versions[0])?;
    let mut exec = capi::Executor::new(&lib)?;
    let mut cases = Vec::new();
    for seed in SEEDS {
        let image = model::input_image(seed);
        let mut out = vec![0f32; model::NUM_CLASSES];
        exec.set_input(model::INPUT_NAME, &image, &model::INPUT_SHAPE)?;
        exec.run()?;
        exec.get_output(0, &mut out, &model::OUTPUT_SHAPE)?;
        let want = model::reference(&image);
        cases.push(format!(
            "{{\"seed\": {seed}, \"input_bits\": {}, \"capi_output_bits\": {}, \"reference_output_bits\": {}}}",
            bits(&image),
            bits(&out),
            bits(&want)
        ));
    }
    let path_list: Vec<String> = versions.iter().map(|v| json_str(&v.to_string_lossy())).collect();
    let json = format!(
        "{{\n\"demo\": {},\n\"batches\": {:?},\n\"versions\": [{}],\n\"manifest\": {},\n\"tiny\": {},\n\"large\": {},\n\"cases\": [\n{}\n]\n}}\n",
        json_str(&versions[0].to_string_lossy()),
        BATCHES,
        path_list.join(", "),
        json_str(&manifest.to_string_lossy()),
        json_str(&tiny_so.to_string_lossy()),
        json_str(&large.to_string_lossy()),
        cases.join(",\n")
    );
    let out = dir.join("python_fixtures.json");
    model::write_atomic(&out, json.as_bytes()).map_err(|e| format!("{}: {e}", out.display()))?;
    println!("{}", out.display());
    Ok(())
}

const GRID_BATCHES: [usize; 3] = [1, 2, 4];
const GRID_LENGTHS: [usize; 2] = [4, 8];
/// Lengths of the `--seq-grid` cases: each padded into a bucket of another length.
const CASE_LENGTHS: [usize; 4] = [2, 3, 5, 7];

/// `--seq-grid`: the bucket set over batch and length, and each case's numbers alone.
fn seq_grid() -> Result<(), String> {
    let base = seq_model::SeqSpec { name: "seqgrid".into(), ..seq_model::SeqSpec::small() };
    let mut names = Vec::new();
    let mut dir = std::path::PathBuf::new();
    for b in GRID_BATCHES {
        for s in GRID_LENGTHS {
            let so = seq_model::build_seq(&base.with_seq_len(s).with_batch(b))?;
            dir = so.parent().ok_or("the model has no directory")?.to_path_buf();
            names.push(so.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    let manifest = dir.join("seqgrid.buckets");
    let text = format!(
        "# the sequence block at batch 1, 2, 4 by length 4, 8 (examples/python_fixtures.rs)\n{}\n",
        names.join("\n")
    );
    model::write_atomic(&manifest, text.as_bytes()).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let mut cases = Vec::new();
    for (k, len) in CASE_LENGTHS.into_iter().enumerate() {
        for seed in [k as u64 * 10, k as u64 * 10 + 1] {
            cases.push(seq_case(&base.with_seq_len(len), seed)?);
        }
    }
    let json = format!(
        "{{\n\"manifest\": {},\n\"cases\": [\n{}\n]\n}}\n",
        json_str(&manifest.to_string_lossy()),
        cases.join(",\n")
    );
    let out = dir.join("seq_grid.json");
    model::write_atomic(&out, json.as_bytes()).map_err(|e| format!("{}: {e}", out.display()))?;
    println!("{}", out.display());
    Ok(())
}

/// One sequence of `spec`'s length run alone through the C API: its tokens and outputs.
fn seq_case(spec: &seq_model::SeqSpec, seed: u64) -> Result<String, String> {
    let lib = capi::Library::load(&seq_model::build_seq(spec)?)?;
    let mut exec = capi::Executor::new(&lib)?;
    let tokens = seq_model::tokens_for(spec, seed);
    let (s, h) = (spec.seq_len, spec.hidden);
    let (mut out, mut attn) = (vec![0f32; s * h], vec![0f32; s * s]);
    exec.set_input(seq_model::SEQ_INPUT_NAME, &tokens, &spec.input_shape())?;
    exec.run()?;
    exec.get_output(seq_model::OUT_INDEX, &mut out, &spec.out_shape())?;
    exec.get_output(seq_model::ATTN_INDEX, &mut attn, &spec.attn_shape())?;
    Ok(format!(
        "{{\"len\": {s}, \"seed\": {seed}, \"tokens_bits\": {}, \"out_bits\": {}, \"attn_bits\": {}}}",
        bits(&tokens),
        bits(&out),
        bits(&attn)
    ))
}

/// Median over 5 samples of `n` iterations of set_input + run + get_output through the C API.
fn bench_tiny(so: &std::path::Path, spec: &Spec, n: usize) -> Result<(), String> {
    let lib = capi::Library::load(so)?;
    let mut exec = capi::Executor::new(&lib)?;
    let x = vec![0.25f32; spec.batch_input_len()];
    let mut y = vec![0f32; spec.num_classes];
    let (ishape, oshape) = (spec.input_shape(), spec.output_shape());
    let mut step = |exec: &mut capi::Executor| -> Result<(), String> {
        exec.set_input(model::INPUT_NAME, &x, &ishape)?;
        exec.run()?;
        exec.get_output(0, &mut y, &oshape)
    };
    for _ in 0..n.min(10_000) {
        step(&mut exec)?;
    }
    let mut samples = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..n {
            step(&mut exec)?;
        }
        samples.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    println!("{:.3}", samples[2]);
    Ok(())
}
