//! Bucketed executors on models the repository builds (`examples/demo/`): the demo CNN compiled
//! at batch 1, 2, 4 and 8, and the causal sequence block compiled at lengths 1, 2, 4, 8, 12.
//! Every batch from 1 to 8 and every length from 1 to 12 goes through the buckets, and each
//! result equals, bit for bit, a run of the exact-shape version (for batches: each row equals
//! the batch-1 run of its image). One test body per check, run against the Rust API and the C
//! ABI alike.

#[path = "../examples/demo/capi.rs"]
mod capi;
#[path = "../examples/demo/model.rs"]
mod model;
#[path = "../examples/demo/seq_model.rs"]
mod seq_model;

use capi::{Executor, Library};
use model::Spec;
use seq_model::SeqSpec;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::graph::buckets::{policy, BucketContext, BucketSet};
use tvm_runtime::graph::options::BucketOptions;
use tvm_runtime::runtime::{Module, NDArray};

const BATCHES: [usize; 4] = [1, 2, 4, 8];

/// One bucketed executor, through either API.
trait Bucketed {
    fn set(&mut self, name: &str, data: &[f32], shape: &[i64]) -> Result<(), String>;
    fn run(&mut self) -> Result<(), String>;
    /// Output `index` of the last run: its shape and values.
    fn output(&mut self, index: i32) -> (Vec<i64>, Vec<f32>);
    fn bucket(&self) -> usize;
}

impl Bucketed for Executor {
    fn set(&mut self, name: &str, data: &[f32], shape: &[i64]) -> Result<(), String> {
        self.set_input(name, data, shape)
    }
    fn run(&mut self) -> Result<(), String> {
        Executor::run(self)
    }
    fn output(&mut self, index: i32) -> (Vec<i64>, Vec<f32>) {
        let shape = self.output_shape(index).unwrap();
        let mut out = vec![0f32; shape.iter().product::<i64>() as usize];
        self.get_output(index, &mut out, &shape).unwrap();
        (shape, out)
    }
    fn bucket(&self) -> usize {
        self.current_bucket().unwrap() as usize
    }
}

impl Bucketed for BucketContext {
    fn set(&mut self, name: &str, data: &[f32], shape: &[i64]) -> Result<(), String> {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        let x = NDArray::from_bytes(shape, DLDataType::FLOAT32, &bytes).map_err(|e| e.to_string())?;
        let i = self.input(tvm_runtime::graph::Key::Name(name)).map_err(|e| e.to_string())?;
        self.set_input(i, x.tensor()).map_err(|e| e.to_string())
    }
    fn run(&mut self) -> Result<(), String> {
        BucketContext::run(self).map_err(|e| e.to_string())
    }
    fn output(&mut self, index: i32) -> (Vec<i64>, Vec<f32>) {
        // The view path (a cut batch is a leading block) or the compact copy.
        let y = self.get_output(index as usize).unwrap();
        let values =
            y.to_vec_u8().unwrap().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        (y.shape().to_vec(), values)
    }
    fn bucket(&self) -> usize {
        self.current_bucket()
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

// ---- the demo CNN at batch 1, 2, 4, 8 ---------------------------------------------------------

fn cnn_versions() -> &'static Vec<PathBuf> {
    static SO: OnceLock<Vec<PathBuf>> = OnceLock::new();
    SO.get_or_init(|| {
        BATCHES.iter().map(|&b| model::build_spec(&Spec::demo().with_batch(b)).expect("building the demo")).collect()
    })
}

fn image_seed(batch: usize, row: usize) -> u64 {
    1000 + 17 * batch as u64 + row as u64
}

/// Class probabilities of one image from the batch-1 version through a plain executor.
fn batch_one_row(seed: u64) -> Vec<f32> {
    let lib = Library::load(&cnn_versions()[0]).unwrap();
    let mut exec = Executor::new(&lib).unwrap();
    let spec = Spec::demo();
    exec.set_input(model::INPUT_NAME, &model::input_for(&spec, seed), &spec.input_shape()).unwrap();
    exec.run().unwrap();
    let mut out = vec![0f32; spec.num_classes];
    exec.get_output(0, &mut out, &spec.output_shape()).unwrap();
    out
}

/// Every batch from 1 to 8 runs in the smallest covering bucket and gives each row exactly the
/// batch-1 result of its image.
fn cnn_every_batch(s: &mut dyn Bucketed, want_rows: &dyn Fn(u64) -> Vec<f32>) {
    let spec = Spec::demo();
    for n in 1..=8usize {
        let seeds: Vec<u64> = (0..n).map(|r| image_seed(n, r)).collect();
        let shape = spec.with_batch(n).input_shape();
        s.set(model::INPUT_NAME, &model::input_batch(&spec, &seeds), &shape).unwrap();
        assert_eq!(BATCHES[s.bucket()], n.next_power_of_two(), "batch {n}");
        s.run().unwrap();
        let (shape, y) = s.output(0);
        assert_eq!(shape, [n as i64, spec.num_classes as i64], "batch {n}");
        for (r, row) in y.chunks(spec.num_classes).enumerate() {
            assert_eq!(bits(row), bits(&want_rows(seeds[r])), "batch {n} row {r}");
        }
    }
    let e = s.set(model::INPUT_NAME, &vec![0.0; 9 * spec.input_len()], &spec.with_batch(9).input_shape());
    let e = e.unwrap_err();
    assert!(e.contains("set_input `data` axis 0: extent 9 is beyond the largest bucket's 8"), "{e}");
    let mut wrong = spec.input_shape();
    wrong[2] = 8;
    let e = s.set(model::INPUT_NAME, &vec![0.0; 8 * 16], &wrong).unwrap_err();
    assert!(e.contains("set_input `data` axis 2: extent 8, but this axis is static: 16 in every bucket"), "{e}");
}

fn cnn_libraries() -> Vec<Library> {
    cnn_versions().iter().rev().map(|p| Library::load(p).unwrap()).collect()
}

fn cnn_bucket_set() -> Arc<BucketSet> {
    tvm_runtime::init();
    let versions: Vec<(Module, String)> = cnn_versions()
        .iter()
        .map(|p| (Module::load_from_file(p.to_str().unwrap(), "").unwrap(), p.display().to_string()))
        .collect();
    BucketSet::from_factories(&versions, &[DLDevice::cpu(0)], BucketOptions::parse(None).unwrap()).unwrap()
}

fn rows_by_seed() -> impl Fn(u64) -> Vec<f32> {
    let rows: Vec<(u64, Vec<f32>)> =
        (1..=8).flat_map(|n| (0..n).map(move |r| image_seed(n, r))).map(|s| (s, batch_one_row(s))).collect();
    move |seed| rows.iter().find(|(s, _)| *s == seed).expect("precomputed").1.clone()
}

#[test]
fn cnn_every_batch_through_the_c_api() {
    let libs = cnn_libraries();
    let mut exec = Executor::bucketed(&libs.iter().collect::<Vec<_>>(), None).unwrap();
    drop(libs);
    cnn_every_batch(&mut exec, &rows_by_seed());
}

#[test]
fn cnn_every_batch_through_the_rust_api() {
    let mut ctx = BucketContext::new(cnn_bucket_set()).unwrap();
    cnn_every_batch(&mut ctx, &rows_by_seed());
}

/// Four threads, each with its own context over one bucket set (one copy of the weights), run
/// random batch sizes and get the batch-1 rows bit for bit.
#[test]
fn contexts_on_threads_share_one_bucket_set() {
    let set = cnn_bucket_set();
    let rows = Arc::new(rows_by_seed());
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (set, rows) = (set.clone(), rows.clone());
            std::thread::spawn(move || {
                let mut ctx = BucketContext::new(set).unwrap();
                let spec = Spec::demo();
                let mut rng = model::XorShift::new(t);
                for _ in 0..60 {
                    let n = 1 + (rng.next_u64() % 8) as usize;
                    let seeds: Vec<u64> = (0..n).map(|r| image_seed(n, r)).collect();
                    ctx.set(model::INPUT_NAME, &model::input_batch(&spec, &seeds), &spec.with_batch(n).input_shape())
                        .unwrap();
                    Bucketed::run(&mut ctx).unwrap();
                    let (_, y) = Bucketed::output(&mut ctx, 0);
                    for (r, row) in y.chunks(spec.num_classes).enumerate() {
                        assert_eq!(bits(row), bits(&rows(seeds[r])), "thread {t} batch {n} row {r}");
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
}

// ---- the sequence block at lengths 1, 2, 4, 8, 12 ---------------------------------------------

const MAX_LEN: i64 = 12;

/// The libraries of every length from 1 to 12 (index = length - 1).
fn seq_versions() -> &'static Vec<PathBuf> {
    static SO: OnceLock<Vec<PathBuf>> = OnceLock::new();
    SO.get_or_init(|| {
        (1..=MAX_LEN as usize)
            .map(|s| seq_model::build_seq(&SeqSpec::small().with_seq_len(s)).expect("building the sequence model"))
            .collect()
    })
}

/// The bucket lengths: the logarithmic policy over 1..=12.
fn seq_buckets() -> Vec<i64> {
    policy::logarithmic(1, MAX_LEN, 2).unwrap()
}

/// `(out, attn)` of the exact-length version.
fn seq_exact(len: usize, tokens: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let lib = Library::load(&seq_versions()[len - 1]).unwrap();
    let mut exec = Executor::new(&lib).unwrap();
    let spec = SeqSpec::small().with_seq_len(len);
    exec.set_input(seq_model::SEQ_INPUT_NAME, tokens, &spec.input_shape()).unwrap();
    exec.run().unwrap();
    (exec.output(seq_model::OUT_INDEX).1, exec.output(seq_model::ATTN_INDEX).1)
}

/// Every length from 1 to 12 gives the exact-length version's `out` and `attn`, bit for bit,
/// with their true shapes ([1, s, 32] and [1, s, s]).
fn seq_every_length(s: &mut dyn Bucketed) {
    let buckets = seq_buckets();
    for len in 1..=MAX_LEN as usize {
        let spec = SeqSpec::small().with_seq_len(len);
        let tokens = seq_model::tokens_for(&spec, 77 + len as u64);
        s.set(seq_model::SEQ_INPUT_NAME, &tokens, &spec.input_shape()).unwrap();
        let covering = *buckets.iter().find(|&&b| b >= len as i64).unwrap();
        assert_eq!(buckets[s.bucket()], covering, "length {len}");
        s.run().unwrap();
        let (out_shape, out) = s.output(seq_model::OUT_INDEX);
        let (attn_shape, attn) = s.output(seq_model::ATTN_INDEX);
        assert_eq!((out_shape, attn_shape), (spec.out_shape().to_vec(), spec.attn_shape().to_vec()), "length {len}");
        let (want_out, want_attn) = seq_exact(len, &tokens);
        assert_eq!(bits(&out), bits(&want_out), "out, length {len}");
        assert_eq!(bits(&attn), bits(&want_attn), "attn, length {len}");
    }
    let long = SeqSpec::small().with_seq_len(13);
    let e = s.set(seq_model::SEQ_INPUT_NAME, &vec![0.0; long.input_len()], &long.input_shape()).unwrap_err();
    assert!(e.contains("set_input `tokens` axis 1: extent 13 is beyond the largest bucket's 12"), "{e}");
}

fn seq_bucket_libraries() -> Vec<Library> {
    seq_buckets().iter().map(|&b| Library::load(&seq_versions()[b as usize - 1]).unwrap()).collect()
}

#[test]
fn seq_every_length_through_the_c_api() {
    let libs = seq_bucket_libraries();
    let mut exec = Executor::bucketed(&libs.iter().collect::<Vec<_>>(), None).unwrap();
    seq_every_length(&mut exec);
}

#[test]
fn seq_every_length_through_the_rust_api() {
    tvm_runtime::init();
    let versions: Vec<(Module, String)> = seq_buckets()
        .iter()
        .map(|&b| {
            let p = &seq_versions()[b as usize - 1];
            (Module::load_from_file(p.to_str().unwrap(), "").unwrap(), format!("length {b}"))
        })
        .collect();
    let set = BucketSet::from_factories(&versions, &[DLDevice::cpu(0)], BucketOptions::parse(None).unwrap()).unwrap();
    seq_every_length(&mut BucketContext::new(set).unwrap());
}

/// A manifest names the bucket libraries relative to itself; versions load by path.
#[test]
fn seq_buckets_from_a_manifest() {
    let dir = seq_versions()[0].parent().unwrap().to_path_buf();
    let manifest = dir.join(format!("seq.{}.buckets", std::process::id()));
    let lines: Vec<String> = seq_buckets()
        .iter()
        .map(|&b| seq_versions()[b as usize - 1].file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    std::fs::write(&manifest, format!("# the sequence block, logarithmic buckets\n{}\n", lines.join("\n"))).unwrap();
    let exec = Executor::bucketed_from_manifest(&manifest);
    std::fs::remove_file(&manifest).unwrap();
    seq_every_length(&mut exec.unwrap());
}

/// Versions of different models are refused, naming both files and the difference.
#[test]
fn a_cnn_and_a_sequence_model_are_not_buckets_of_one_model() {
    let cnn = Library::load(&cnn_versions()[0]).unwrap();
    let seq = Library::load(&seq_versions()[3]).unwrap();
    let e = Executor::bucketed(&[&cnn, &seq], None).err().unwrap();
    assert!(e.contains("factory 0 and factory 1 differ"), "{e}");
}
