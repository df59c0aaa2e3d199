//! Bucketed executors (`TVMGraphExecutorCreateBucketed`) against plain ones, each side measured
//! in the same run, through the C API as an application would use them, on the demo CNN
//! compiled at batch 1, 2, 4 and 8 (`examples/demo/model.rs`, `Spec::with_batch`):
//!
//! * dispatch: set_input / run / get_output through the buckets against a plain batch-4
//!   executor at batch 4: a request at the exact bucket shape (the pick), and a batch-3 request
//!   padded into the batch-4 bucket (pick + pad + cut) against the plain run at batch 4;
//! * throughput: batches of 1..8 images, each size in turn, through the buckets against always
//!   padding to the largest (a plain batch-8 executor fed zero-padded batches), in images/s;
//! * memory: RSS of a process that loads the 4 versions and runs the bucketed executor at batch 8,
//!   against one that loads the batch-8 version and runs a plain executor, each in a fresh child
//!   process; on the demo CNN and on a model whose 8 MiB of weights dwarf its activations.
//!
//! Kernels run on one thread on both sides. `BENCH_ONLY=dispatch|throughput|memory` runs one
//! part; `BENCH_ROUNDS` sets the rounds.

#[path = "common/mod.rs"]
mod common;
#[path = "../examples/demo/model.rs"]
mod model;

use common::*;
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::time::Duration;
use tvm_runtime::abi::DLDevice;
use tvm_runtime::ffi::graph_executor::buckets::TVMGraphExecutorCreateBucketed;
use tvm_runtime::ffi::graph_executor::*;
use tvm_runtime::ffi::legacy::module::{TVMModFree, TVMModLoadFromFile};

const BATCHES: [usize; 4] = [1, 2, 4, 8];

/// The versions of one model: its spec and the library of each batch size.
struct Versions {
    spec: model::Spec,
    so: Vec<PathBuf>,
}

impl Versions {
    fn build(spec: model::Spec) -> Versions {
        let so = BATCHES
            .iter()
            .map(|&b| {
                let s = spec.with_batch(b);
                model::build_spec(&s).unwrap_or_else(|e| panic!("building {}: {e}", s.name))
            })
            .collect();
        Versions { spec, so }
    }

    /// The libraries the parent process built (a memory child must not build: the weights it
    /// would make and free stay in the allocator and hide the growth being measured).
    fn built(spec: model::Spec) -> Versions {
        let dir = model::target_dir().join("demo");
        let so = BATCHES.iter().map(|&b| dir.join(format!("{}_model.so", spec.with_batch(b).name))).collect();
        Versions { spec, so }
    }

    fn load(&self, batch: usize) -> *mut c_void {
        let i = BATCHES.iter().position(|&b| b == batch).unwrap();
        let path = CString::new(self.so[i].to_str().unwrap()).unwrap();
        let mut m = std::ptr::null_mut();
        check(unsafe { TVMModLoadFromFile(path.as_ptr(), c"".as_ptr(), &mut m) }, "load");
        m
    }

    fn input_shape(&self, batch: usize) -> Vec<i64> {
        self.spec.with_batch(batch).input_shape().to_vec()
    }

    fn output_shape(&self, batch: usize) -> Vec<i64> {
        self.spec.with_batch(batch).output_shape().to_vec()
    }

    fn images(&self, batch: usize) -> Vec<f32> {
        model::input_batch(&self.spec, &(0..batch as u64).collect::<Vec<_>>())
    }
}

/// Both sides run kernels on one thread: on a shared 2-core machine, two-thread kernels time
/// the other load more than the executors.
const OPTIONS: &std::ffi::CStr = c"intra_op_threads=1";

fn plain(factory: *mut c_void) -> *mut TVMGraphExecutor {
    let dev = DLDevice::cpu(0);
    let mut g = std::ptr::null_mut();
    check(
        unsafe { TVMGraphExecutorCreateFromFactoryWithOptions(factory, &dev, 1, OPTIONS.as_ptr(), &mut g) },
        "executor",
    );
    g
}

/// A bucketed executor over every version; the factories are freed (it keeps what it needs).
fn bucketed(v: &Versions) -> *mut TVMGraphExecutor {
    let factories: Vec<*mut c_void> = BATCHES.iter().map(|&b| v.load(b)).collect();
    let dev = DLDevice::cpu(0);
    let mut g = std::ptr::null_mut();
    let rc = unsafe {
        TVMGraphExecutorCreateBucketed(factories.as_ptr(), factories.len() as u32, &dev, 1, OPTIONS.as_ptr(), &mut g)
    };
    check(rc, "bucketed executor");
    factories.into_iter().for_each(|f| check(unsafe { TVMModFree(f) }, "free"));
    g
}

/// One inference of `x` into `y`.
fn infer(g: *mut TVMGraphExecutor, x: &mut Buffer, y: &mut Buffer) {
    check(unsafe { TVMGraphExecutorSetInputByIndex(g, 0, &x.tensor()) }, "set_input");
    check(unsafe { TVMGraphExecutorRun(g) }, "run");
    check(unsafe { TVMGraphExecutorGetOutput(g, 0, &mut y.tensor()) }, "get_output");
}

fn rounds() -> usize {
    std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5)
}

fn dispatch(v: &Versions) {
    let f4 = v.load(4);
    let g_plain = plain(f4);
    let g_buckets = bucketed(v);
    let (mut x4, mut y4) = (Buffer::new(&v.input_shape(4), &v.images(4)), Buffer::new(&v.output_shape(4), &[]));
    let (mut x3, mut y3) = (Buffer::new(&v.input_shape(3), &v.images(3)), Buffer::new(&v.output_shape(3), &[]));
    let (mut xb, mut yb) = (Buffer::new(&v.input_shape(4), &v.images(4)), Buffer::new(&v.output_shape(4), &[]));
    // The same numbers first: the buckets' batch 4 and batch 3 equal the plain batch-4 rows.
    infer(g_plain, &mut x4, &mut y4);
    infer(g_buckets, &mut xb, &mut yb);
    assert_eq!(y4.values(), yb.values());
    infer(g_buckets, &mut x3, &mut y3);
    assert_eq!(&y4.values()[..y3.values().len()], y3.values());
    let t = compare_stats(
        &mut [&mut || infer(g_plain, &mut x4, &mut y4), &mut || infer(g_buckets, &mut xb, &mut yb), &mut || {
            infer(g_buckets, &mut x3, &mut y3)
        }],
        Duration::from_millis(40),
        rounds(),
        3,
    );
    let us = |ns: f64| ns / 1e3;
    let name = format!("dispatch [{}]", v.spec.name);
    report(
        &format!("{name} exact bucket (batch 4)"),
        "buckets",
        us(t[1].median),
        "plain batch-4",
        us(t[0].median),
        "us",
        Some(1.05),
    );
    report_best(
        &format!("{name} exact bucket (batch 4)"),
        "buckets",
        us(t[1].min),
        "plain batch-4",
        us(t[0].min),
        "us",
    );
    report(
        &format!("{name} batch 3 padded to 4"),
        "buckets",
        us(t[2].median),
        "plain batch-4",
        us(t[0].median),
        "us",
        Some(1.05),
    );
    report_best(&format!("{name} batch 3 padded to 4"), "buckets", us(t[2].min), "plain batch-4", us(t[0].min), "us");
    copies_alone(g_plain, g_buckets, [&mut x4, &mut y4, &mut x3, &mut y3], &name);
    check(unsafe { TVMGraphExecutorFree(g_plain) }, "free");
    check(unsafe { TVMGraphExecutorFree(g_buckets) }, "free");
    check(unsafe { TVMModFree(f4) }, "free");
}

/// set_input + get_output without the run: what dispatch adds, in absolute terms.
fn copies_alone(g_plain: *mut TVMGraphExecutor, g_buckets: *mut TVMGraphExecutor, b: [&mut Buffer; 4], name: &str) {
    let [x4, y4, x3, y3] = b;
    let copies = |g: *mut TVMGraphExecutor, x: &mut Buffer, y: &mut Buffer| {
        check(unsafe { TVMGraphExecutorSetInputByIndex(g, 0, &x.tensor()) }, "set_input");
        check(unsafe { TVMGraphExecutorGetOutput(g, 0, &mut y.tensor()) }, "get_output");
    };
    // The bucketed executor's last run was batch 3; run batch 3 so its outputs have that shape.
    infer(g_buckets, x3, y3);
    let t = compare(
        &mut [&mut || copies(g_plain, x4, y4), &mut || copies(g_buckets, x3, y3)],
        Duration::from_millis(20),
        rounds(),
        3,
    );
    report(
        &format!("{name} set_input + get_output alone, batch 3 into 4"),
        "buckets",
        t[1] / 1e3,
        "plain batch-4",
        t[0] / 1e3,
        "us",
        None,
    );
}

/// Batches of 1..=8 images through the buckets, and through a batch-8 executor with each batch
/// zero-padded to 8 and the rows cut from its output (what a runtime without buckets makes a
/// user do).
fn throughput(v: &Versions) {
    let f8 = v.load(8);
    let g_plain = plain(f8);
    let g_buckets = bucketed(v);
    let mut requests: Vec<(Buffer, Buffer)> =
        (1..=8).map(|n| (Buffer::new(&v.input_shape(n), &v.images(n)), Buffer::new(&v.output_shape(n), &[]))).collect();
    let mut padded: Vec<(Buffer, Buffer)> =
        (1..=8).map(|n| (Buffer::new(&v.input_shape(8), &v.images(n)), Buffer::new(&v.output_shape(8), &[]))).collect();
    let mut through_buckets = || requests.iter_mut().for_each(|(x, y)| infer(g_buckets, x, y));
    let mut padded_to_8 = || {
        for (n, (x, y)) in padded.iter_mut().enumerate() {
            infer(g_plain, x, y);
            let rows = (n + 1) * v.spec.num_classes;
            keep(y.values()[..rows].to_vec());
        }
    };
    let t = compare(&mut [&mut through_buckets, &mut padded_to_8], Duration::from_millis(200), rounds(), 2);
    let images_per_s = |ns: f64| 36.0 / (ns / 1e9);
    let (a, b) = (images_per_s(t[0]), images_per_s(t[1]));
    println!(
        "throughput [{}], batches 1..8: buckets {:.0} images/s, always padded to 8 {:.0} images/s, speedup {:.2}",
        v.spec.name,
        a,
        b,
        a / b
    );
    check(unsafe { TVMGraphExecutorFree(g_plain) }, "free");
    check(unsafe { TVMGraphExecutorFree(g_buckets) }, "free");
    check(unsafe { TVMModFree(f8) }, "free");
}

/// In a child: RSS growth from loading and running batch 8 through `what` ("buckets": all four
/// versions behind one bucketed executor; "plain": the batch-8 version alone).
fn child(what: &str, v: &Versions) {
    tvm_runtime::init();
    let base = rss_bytes();
    let g = match what {
        "buckets" => bucketed(v),
        _ => {
            let f = v.load(8);
            let g = plain(f);
            check(unsafe { TVMModFree(f) }, "free");
            g
        }
    };
    let (mut x, mut y) = (Buffer::new(&v.input_shape(8), &v.images(8)), Buffer::new(&v.output_shape(8), &[]));
    infer(g, &mut x, &mut y);
    println!("{}", rss_bytes() - base);
    check(unsafe { TVMGraphExecutorFree(g) }, "free");
}

fn rss_of(what: &str, v: &Versions) -> f64 {
    child_measure(&[("BUCKETS_BENCH_CHILD", what), ("BUCKETS_BENCH_MODEL", &v.spec.name)])
}

fn memory(v: &Versions) {
    let (buckets, one) = (rss_of("buckets", v), rss_of("plain", v));
    let mib = |b: f64| b / 1048576.0;
    report(
        &format!("memory [{}]", v.spec.name),
        "4 buckets",
        mib(buckets),
        "batch-8 executor",
        mib(one),
        "MiB",
        Some(1.3),
    );
}

fn main() {
    if let Ok(what) = std::env::var("BUCKETS_BENCH_CHILD") {
        let name = std::env::var("BUCKETS_BENCH_MODEL").unwrap();
        let spec = [model::Spec::demo(), model::Spec::wide_conv()].into_iter().find(|s| s.name == name).unwrap();
        return child(&what, &Versions::built(spec));
    }
    let models = [Versions::build(model::Spec::demo()), Versions::build(model::Spec::wide_conv())];
    tvm_runtime::init();
    println!("buckets bench: load average {}", load_note());
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let part = |name: &str| only.is_empty() || only == name;
    if part("dispatch") {
        dispatch(&models[0]);
    }
    if part("throughput") {
        throughput(&models[0]);
    }
    if part("memory") {
        models.iter().for_each(memory);
    }
}
