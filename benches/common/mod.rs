//! Small timing and setup helpers shared by the benches (each bench is a `harness = false`
//! binary that includes this file with `#[path]`).
#![allow(dead_code)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch directory for bench data: `<target>/<profile>/bench-data/<name>` next to the bench
/// binary (`<target>/<profile>/deps/<bench>`).
pub fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("path of the bench binary");
    let profile_dir = exe.parent().and_then(Path::parent).expect("bench binary lives in <target>/<profile>/deps");
    let dir = profile_dir.join("bench-data").join(name);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// Compile C `sources` into a shared library with `cc -O2 -shared -fPIC` (TVM's headers from
/// include/ on the include path).
pub fn build_so(out: &Path, sources: &[PathBuf]) -> PathBuf {
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cmd.args(["-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(repo().join("include"))
        .args(sources)
        .arg("-o")
        .arg(out);
    let status = cmd.status().expect("a C compiler (cc) must be installed");
    assert!(status.success(), "compiling {} failed", out.display());
    out.to_path_buf()
}

/// A chain x -> op1 -> ... -> opN, storage ids alternating between two slots as TVM's planner
/// assigns them (x has its own slot).
pub fn chain_json(n: usize) -> String {
    let mut nodes = vec![r#"{"op": "null", "name": "x", "inputs": []}"#.to_string()];
    for i in 1..=n {
        nodes.push(format!(
            r#"{{"op": "tvm_op", "name": "add_{i}", "attrs": {{"func_name": "chain_add", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0"}}, "inputs": [[{}, 0, 0]]}}"#,
            i - 1
        ));
    }
    let storage: Vec<String> = (0..=n).map(|e| if e == 0 { 0 } else { 1 + (e - 1) % 2 }.to_string()).collect();
    let list = |item: &str| vec![item; n + 1].join(", ");
    format!(
        r#"{{"nodes": [{}], "arg_nodes": [0], "heads": [[{n}, 0, 0]], "node_row_ptr": [{}],
"attrs": {{"dltype": ["list_str", [{}]], "storage_id": ["list_int", [{}]], "shape": ["list_shape", [{}]], "device_index": ["list_int", [{}]]}}}}"#,
        nodes.join(",\n"),
        (0..=n + 1).map(|i| i.to_string()).collect::<Vec<_>>().join(", "),
        list(r#""float32""#),
        storage.join(", "),
        list("[1]"),
        list("1"),
    )
}

pub fn median(v: &mut [f64]) -> f64 {
    assert!(!v.is_empty());
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Iterations of `f` that take about `target` (at least 1).
pub fn calibrate(f: &mut dyn FnMut(), target: Duration) -> u64 {
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        let e = t.elapsed();
        if e >= target / 4 || iters >= 1 << 30 {
            let per = e.as_secs_f64() / iters as f64;
            return ((target.as_secs_f64() / per.max(1e-12)) as u64).max(1);
        }
        iters *= 4;
    }
}

/// Nanoseconds per call of `f`: `samples` samples of `iters` calls each, median.
pub fn time_block(f: &mut dyn FnMut(), iters: u64, samples: usize) -> Vec<f64> {
    (0..samples)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect()
}

/// Median and minimum ns per call of one side.
#[derive(Clone, Copy, Debug)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
}

/// Measure every side in the same run, interleaved: `rounds` rounds, each running every side
/// for `samples_per_round` samples of about `sample_time`, after a warm-up. Returns the median
/// ns per call of each side over all its samples.
pub fn compare(
    sides: &mut [&mut dyn FnMut()],
    sample_time: Duration,
    rounds: usize,
    samples_per_round: usize,
) -> Vec<f64> {
    compare_stats(sides, sample_time, rounds, samples_per_round).iter().map(|s| s.median).collect()
}

/// [`compare`] with the fastest sample of each side too (the least disturbed by other load).
pub fn compare_stats(
    sides: &mut [&mut dyn FnMut()],
    sample_time: Duration,
    rounds: usize,
    samples_per_round: usize,
) -> Vec<Stat> {
    let iters: Vec<u64> = sides
        .iter_mut()
        .map(|f| {
            // Warm-up (also lets lazy initialization happen outside the timing).
            let it = calibrate(&mut **f, sample_time);
            time_block(&mut **f, it, 1);
            it
        })
        .collect();
    let mut all: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    for _ in 0..rounds {
        for (i, f) in sides.iter_mut().enumerate() {
            all[i].extend(time_block(&mut **f, iters[i], samples_per_round));
        }
    }
    all.iter_mut().map(|v| Stat { median: median(v), min: v.iter().cloned().fold(f64::INFINITY, f64::min) }).collect()
}

/// Print `name: <a_label> X ns, <b_label> Y ns, ratio R (target <= T)` and whether it is met.
pub fn report(name: &str, a_label: &str, a: f64, b_label: &str, b: f64, unit: &str, target: Option<f64>) -> f64 {
    let ratio = a / b;
    let verdict = match target {
        Some(t) if ratio <= t => format!(" (target <= {t}: met)"),
        Some(t) => format!(" (target <= {t}: MISSED)"),
        None => String::new(),
    };
    println!("{name}: {a_label} {} {unit}, {b_label} {} {unit}, ratio {ratio:.2}{verdict}", fmt(a), fmt(b));
    ratio
}

/// A second line for the fastest samples of two sides (same units as `report`).
pub fn report_best(name: &str, a_label: &str, a: f64, b_label: &str, b: f64, unit: &str) {
    println!("{name} (fastest samples): {a_label} {} {unit}, {b_label} {} {unit}, ratio {:.2}", fmt(a), fmt(b), a / b);
}

pub fn fmt(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// Keep a value alive and opaque to the optimizer.
pub fn keep<T>(x: T) -> T {
    black_box(x)
}

/// Paths of Apache TVM's own `libtvm_runtime.so` and the libraries to preload for it, found
/// through, in order: `TVM_PEER_LIB` (with `TVM_PEER_DEPS`, colon-separated, or else
/// `tvm_ffi/lib/libtvm_ffi.so` beside its `tvm/` package directory),
/// `target/tvm-peer-venv/peer-libs.txt` (written by `benches/setup_tvm_peer.sh`), then a
/// `python3` that has the `tvm` package installed.
pub fn peer_paths() -> Result<(PathBuf, Vec<PathBuf>), String> {
    if let Ok(lib) = std::env::var("TVM_PEER_LIB") {
        let lib = PathBuf::from(lib);
        let deps: Vec<PathBuf> = match std::env::var("TVM_PEER_DEPS") {
            Ok(d) => d.split(':').filter(|s| !s.is_empty()).map(PathBuf::from).collect(),
            Err(_) => {
                // <site-packages>/tvm/lib/libtvm_runtime.so -> <site-packages>/tvm_ffi/lib/
                let guess = lib
                    .parent()
                    .and_then(Path::parent)
                    .and_then(Path::parent)
                    .map(|p| p.join("tvm_ffi/lib/libtvm_ffi.so"));
                guess.filter(|p| p.is_file()).into_iter().collect()
            }
        };
        return Ok((lib, deps));
    }
    let listed = repo().join("target/tvm-peer-venv/peer-libs.txt");
    if let Ok(text) = std::fs::read_to_string(&listed) {
        let lib = text.lines().find_map(|l| l.strip_prefix("TVM_PEER_LIB=")).map(PathBuf::from);
        let deps = text.lines().filter_map(|l| l.strip_prefix("TVM_PEER_DEP=")).map(PathBuf::from).collect();
        if let Some(lib) = lib {
            return Ok((lib, deps));
        }
    }
    // Find the packages without importing them (importing tvm needs its Python dependencies).
    let script = "import importlib.util as u, os\n\
        t = u.find_spec('tvm'); f = u.find_spec('tvm_ffi')\n\
        print(os.path.join(os.path.dirname(t.origin), 'lib', 'libtvm_runtime.so'))\n\
        print(os.path.join(os.path.dirname(f.origin), 'lib', 'libtvm_ffi.so') if f else '')";
    match Command::new("python3").args(["-c", script]).output() {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let mut lines = text.lines();
            let lib = PathBuf::from(lines.next().unwrap_or_default());
            let deps = lines.filter(|l| !l.is_empty()).map(PathBuf::from).collect();
            Ok((lib, deps))
        }
        _ => Err(format!(
            "TVM not found: TVM_PEER_LIB is not set, {} does not exist (run `bash benches/setup_tvm_peer.sh`), \
             and python3 has no `tvm` package",
            listed.display()
        )),
    }
}

/// dlopen TVM's runtime RTLD_NOW | RTLD_LOCAL (so its symbols never interpose on ours), after
/// its dependencies RTLD_GLOBAL. The dependencies stay loaded for the life of the process.
pub fn load_peer_library() -> Result<(libloading::os::unix::Library, PathBuf), String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_LOCAL, RTLD_NOW};
    let (lib, deps) = peer_paths()?;
    if !lib.is_file() {
        return Err(format!("{} does not exist", lib.display()));
    }
    for dep in &deps {
        // SAFETY: loading TVM's own libraries; their initializers only register functions.
        let d = unsafe { Library::open(Some(dep), RTLD_NOW | RTLD_GLOBAL) }
            .map_err(|e| format!("dlopen {}: {e}", dep.display()))?;
        std::mem::forget(d);
    }
    // SAFETY: as above.
    let l = unsafe { Library::open(Some(&lib), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| format!("dlopen {}: {e}", lib.display()))?;
    Ok((l, lib))
}

/// "load average L over the last minute on N CPUs": other processes on the machine (a shared
/// 2-core box) disturb timings, parallel ones most.
pub fn load_note() -> String {
    let load =
        std::fs::read_to_string("/proc/loadavg").ok().and_then(|s| s.split_whitespace().next().map(String::from));
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("load average {} over the last minute on {cpus} CPUs", load.as_deref().unwrap_or("?"))
}

/// Panic with the runtime's last error unless `rc` is 0.
pub fn check(rc: i32, what: &str) {
    if rc != 0 {
        // SAFETY: the last error is a NUL-terminated string the runtime keeps for this thread.
        let msg = unsafe { std::ffi::CStr::from_ptr(tvm_runtime::ffi::legacy::error::TVMGetLastError()) };
        panic!("{what}: {}", msg.to_string_lossy());
    }
}

/// A 64-byte aligned host float32 tensor.
pub struct Buffer {
    data: Vec<f32>,
    shape: Vec<i64>,
    offset: usize,
}

impl Buffer {
    /// A tensor of `shape` starting with `values` (zeros after them).
    pub fn new(shape: &[i64], values: &[f32]) -> Buffer {
        let n = shape.iter().product::<i64>() as usize;
        let mut data = vec![0f32; n + 16];
        let offset = (16 - (data.as_ptr() as usize % 64) / 4) % 16;
        let k = values.len().min(n);
        data[offset..offset + k].copy_from_slice(&values[..k]);
        Buffer { data, shape: shape.to_vec(), offset }
    }

    /// A tensor of `shape` filled with `value`.
    pub fn filled(shape: &[i64], value: f32) -> Buffer {
        let n = shape.iter().product::<i64>() as usize;
        Buffer::new(shape, &vec![value; n])
    }

    pub fn tensor(&mut self) -> tvm_runtime::abi::DLTensor {
        tvm_runtime::abi::DLTensor {
            data: self.data[self.offset..].as_mut_ptr() as *mut std::ffi::c_void,
            device: tvm_runtime::abi::DLDevice::cpu(0),
            ndim: self.shape.len() as i32,
            dtype: tvm_runtime::abi::DLDataType::FLOAT32,
            shape: self.shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        }
    }

    pub fn values(&self) -> &[f32] {
        let n = self.shape.iter().product::<i64>() as usize;
        &self.data[self.offset..self.offset + n]
    }
}

/// This process's resident set size.
pub fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize
}

/// Run this bench binary again with `env` set (a child measuring in a fresh process); its
/// standard output. A failed child fails the bench with what it wrote to stderr.
pub fn run_self(env: &[(&str, &str)]) -> String {
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("path of the bench binary"));
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("running the bench child");
    assert!(out.status.success(), "bench child failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// [`run_self`], parsing the last line the child prints as a number (e.g. its RSS growth).
pub fn child_measure(env: &[(&str, &str)]) -> f64 {
    run_self(env).lines().last().unwrap().trim().parse::<f64>().unwrap()
}

/// The directory holding this build's libtvm_runtime.so: the bench binary's own `deps/` (cargo
/// builds the cdylib there as the library target's crate types), else `<profile>/`.
pub fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the bench binary");
    let deps = exe.parent().expect("bench binary has a parent directory").to_path_buf();
    let profile = deps.parent().unwrap_or(&deps).to_path_buf();
    [deps, profile]
        .into_iter()
        .find(|d| d.join("libtvm_runtime.so").is_file())
        .expect("libtvm_runtime.so next to the bench binary (built with the library target)")
}
