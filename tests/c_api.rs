//! Builds and runs the C and C++ test programs of `c_tests/` against the shared and static
//! libraries of this very `cargo test` build, with the C and C++ compilers alone (`$CC` / `$CXX`,
//! default `cc` / `c++`); no CMake is needed. CMake users get the same programs from
//! `c_tests/CMakeLists.txt` and ctest (`.ci/run` runs that route too).
//!
//! What is built, by rule rather than by list, so that a new test is found without edits:
//!
//! - every `c_tests/test_*.c`: one program (C11 with GNU extensions), linked to the .so;
//! - every `c_tests/test_*.cc` / `test_*.cpp`: two programs, `<name>_cxx14` and `<name>_cxx17`;
//! - every program gets the paths of the model libraries and data (`TVM_TEST_MLP_SO`, ...) and
//!   `-Wall -Wextra -Werror`; extra sources a test links in are in [`EXTRA_SOURCES`];
//! - the model libraries (`tests/fixtures/*.c`, some with a TVM 0.18 `__tvm_dev_mblob`), the
//!   static-link program, and every public header compiled on its own.
//!
//! Where the libraries are: when the library target is built as a dependency of an integration
//! test, cargo compiles it once with all its crate types (cdylib, staticlib, rlib) into
//! `target/<profile>/deps/`, next to this test binary, but does not copy ("uplift") the .so/.a
//! into `target/<profile>/`; only `cargo build` does that, so the copies there may be stale or
//! absent. The `deps/` files have no hash in their names (cargo leaves it off for a path
//! package's cdylib), so this test takes them from there.
//!
//! Outputs go to `target/<profile>/c_tests_cc/`; a program is rebuilt only when one of its inputs
//! (sources, headers, the library) is newer than it or its compiler command changed.

use std::fs::File;
use std::os::unix::io::AsRawFd;
mod common;
use common::library_dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// Sources some tests link in besides their own: (test stem, source, extra compile flags).
/// `test_cpp_deploy` links the addone kernel as a system library (it registers itself at
/// static-initialization time), as TVM's deploy example links `test_addone_sys.o`.
const EXTRA_SOURCES: &[(&str, &str, &[&str])] =
    &[("test_cpp_deploy", "tests/fixtures/addone.c", &["-DTVM_TEST_SYSTEM_LIB"])];

/// Model libraries: (file name, kernel source, `__tvm_dev_mblob` data file or none).
const MODEL_LIBRARIES: &[(&str, &str, Option<&str>)] = &[
    ("mlp_model.so", "tests/fixtures/kernels.c", Some("tests/data/tvm-0.18/mlp/mblob.bin")),
    ("test_kernels.so", "tests/fixtures/kernels.c", None),
    ("seed004_model.so", "tests/fixtures/kernels.c", Some("tests/data/tvm-0.18/seed004/mblob.bin")),
    ("addone.so", "tests/fixtures/addone.c", None),
];

/// Public headers, each compiled alone (twice): C headers as C99 and C++11, C++ headers as
/// C++14 and C++17, all with `-pedantic`.
const C_HEADERS: &[&str] =
    &["tvm_runtime.h", "dlpack/dlpack.h", "tvm/runtime/c_runtime_api.h", "tvm/runtime/c_backend_api.h"];

const WARNINGS: &[&str] = &["-Wall", "-Wextra", "-Werror"];
const TEST_TIMEOUT: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/<profile>/` (or `target/<triple>/<profile>/`), the parent of the test binary's `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test binary");
    exe.parent().and_then(Path::parent).expect("test binary lives in <target>/<profile>/deps").to_path_buf()
}

fn compiler(var: &str, default: &str) -> String {
    std::env::var(var).ok().filter(|s| !s.is_empty()).unwrap_or_else(|| default.to_string())
}

/// Serializes concurrent `cargo test` runs that share the build directory.
fn lock_build_dir(build_dir: &Path) -> File {
    std::fs::create_dir_all(build_dir).expect("create the build directory");
    let lock = File::create(build_dir.with_extension("lock")).expect("create the lock file");
    // SAFETY: flock on a descriptor we own; released when the file is closed.
    let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock: {}", std::io::Error::last_os_error());
    lock
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Newest modification time of the files under `dir` (recursively).
fn newest_in(dir: &Path) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            let t = if p.is_dir() { newest_in(&p) } else { mtime(&p).unwrap_or(newest) };
            newest = newest.max(t);
        }
    }
    newest
}

/// One compiler invocation producing `output` from `inputs`.
struct Step {
    what: String,
    output: PathBuf,
    inputs: Vec<PathBuf>,
    cmd: Command,
}

impl Step {
    fn new(what: impl Into<String>, output: PathBuf, program: &str) -> Self {
        Step { what: what.into(), output, inputs: Vec::new(), cmd: Command::new(program) }
    }

    /// The file recording the command that made `output` (a changed command rebuilds it).
    fn command_file(&self) -> PathBuf {
        self.output.with_extension("cmd")
    }

    fn stale(&self, headers_time: SystemTime, command: &str) -> bool {
        let Some(out) = mtime(&self.output) else { return true };
        std::fs::read_to_string(self.command_file()).ok().as_deref() != Some(command)
            || headers_time > out
            || self.inputs.iter().any(|i| mtime(i).map_or(true, |t| t > out))
    }

    /// Runs the step (when stale); the error is the compiler's output.
    fn run(mut self, headers_time: SystemTime) -> Result<(), String> {
        let command = format!("{:?}", self.cmd);
        if !self.stale(headers_time, &command) {
            return Ok(());
        }
        let tmp = self.output.with_extension("tmp");
        self.cmd.arg("-o").arg(&tmp);
        let out = self.cmd.output().map_err(|e| format!("{}: cannot run {:?}: {e}", self.what, self.cmd))?;
        if !out.status.success() {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!(
                "{} failed: {:?}\n{}{}",
                self.what,
                self.cmd,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::fs::rename(&tmp, &self.output).map_err(|e| format!("{}: {e}", self.what))?;
        std::fs::write(self.command_file(), command).map_err(|e| format!("{}: {e}", self.what))
    }
}

/// Runs `jobs` on `workers` threads; returns the errors.
fn run_parallel<T: Send>(jobs: Vec<T>, workers: usize, f: impl Fn(T) -> Result<(), String> + Sync) -> Vec<String> {
    let queue = Mutex::new(jobs.into_iter().rev().collect::<Vec<_>>());
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(|| loop {
                let Some(job) = queue.lock().unwrap().pop() else { break };
                if let Err(e) = f(job) {
                    errors.lock().unwrap().push(e);
                }
            });
        }
    });
    errors.into_inner().unwrap()
}

/// A C source defining `__tvm_dev_mblob` with exactly the bytes of `blob`.
fn write_blob_source(blob: &Path, out: &Path) {
    let bytes = std::fs::read(blob).unwrap_or_else(|e| panic!("{}: {e}", blob.display()));
    let text = common::blob_c_source(&bytes);
    if std::fs::read_to_string(out).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(out, text).unwrap();
    }
}

/// A test program found in `c_tests/`.
struct TestProgram {
    /// Executable name (`test_x`, or `test_x_cxx17` for C++).
    name: String,
    stem: String,
    source: PathBuf,
    cxx_std: Option<&'static str>,
}

fn find_tests(dir: &Path) -> Vec<TestProgram> {
    let mut tests = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    for source in files {
        let file = source.file_name().unwrap().to_string_lossy().into_owned();
        let Some((stem, ext)) = file.rsplit_once('.') else { continue };
        if !stem.starts_with("test_") {
            continue;
        }
        match ext {
            "c" => tests.push(TestProgram { name: stem.to_string(), stem: stem.to_string(), source, cxx_std: None }),
            "cc" | "cpp" => {
                for (suffix, std) in [("cxx14", "c++14"), ("cxx17", "c++17")] {
                    tests.push(TestProgram {
                        name: format!("{stem}_{suffix}"),
                        stem: stem.to_string(),
                        source: source.clone(),
                        cxx_std: Some(std),
                    });
                }
            }
            _ => {}
        }
    }
    tests
}

/// Runs one test program with a time limit; Ok(output) or Err(message with output).
fn run_test(exe: &Path, cwd: &Path, ld_path: &std::ffi::OsStr) -> Result<String, String> {
    let log = exe.with_extension("log");
    let out_file = File::create(&log).unwrap();
    let mut child = Command::new(exe)
        .current_dir(cwd)
        .env("LD_LIBRARY_PATH", ld_path)
        // Every object handle the programs pass is validated (a stale or made-up one is an
        // error naming it, not a crash): the tests run the checked mode.
        .env("TVM_RUNTIME_CHECK_HANDLES", "1")
        .stdout(out_file.try_clone().unwrap())
        .stderr(out_file)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: cannot start: {e}", exe.display()))?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > TEST_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    match status {
        Some(s) if s.success() => Ok(output),
        Some(s) => Err(format!("{} failed ({s}):\n{output}", exe.display())),
        None => Err(format!("{} timed out after {:?}:\n{output}", exe.display(), TEST_TIMEOUT)),
    }
}

#[test]
fn c_and_cpp_tests_pass() {
    let repo = repo();
    let lib_dir = library_dir();
    let build = profile_dir().join("c_tests_cc");
    let _lock = lock_build_dir(&build);
    let cc = compiler("CC", "cc");
    let cxx = compiler("CXX", "c++");
    let include = repo.join("include");
    let c_tests = repo.join("c_tests");
    let shared_lib = lib_dir.join("libtvm_runtime.so");
    let static_lib = lib_dir.join("libtvm_runtime.a");
    // Headers are inputs of everything: the newest of them.
    let headers_time = newest_in(&include).max(
        std::fs::read_dir(&c_tests)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "h"))
            .filter_map(|e| mtime(&e.path()))
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH),
    );
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4);

    // --- model libraries and objects linked into tests --------------------------------------
    let mut steps = Vec::new();
    for &(file, kernel, blob) in MODEL_LIBRARIES {
        let output = build.join(file);
        let mut step = Step::new(format!("model library {file}"), output, &cc);
        step.cmd
            .args(["-shared", "-fPIC", "-O2", "-std=gnu11", "-fvisibility=hidden", "-Wl,--no-undefined"])
            .args(WARNINGS)
            .arg("-I")
            .arg(&include)
            .arg(repo.join(kernel));
        step.inputs.push(repo.join(kernel));
        if let Some(blob) = blob {
            let blob_c = build.join(format!("{file}.mblob.c"));
            write_blob_source(&repo.join(blob), &blob_c);
            step.cmd.arg(&blob_c);
            step.inputs.push(repo.join(blob));
        }
        steps.push(step);
    }
    let mut extra_objects: Vec<(&str, PathBuf)> = Vec::new();
    for (i, &(stem, source, flags)) in EXTRA_SOURCES.iter().enumerate() {
        let output = build.join(format!("{stem}.extra{i}.o"));
        let mut step = Step::new(format!("{source} for {stem}"), output.clone(), &cc);
        step.cmd
            .args(["-c", "-O2", "-std=gnu11", "-fPIC"])
            .args(WARNINGS)
            .args(flags)
            .arg("-I")
            .arg(&include)
            .arg(repo.join(source));
        step.inputs.push(repo.join(source));
        steps.push(step);
        extra_objects.push((stem, output));
    }
    let errors = run_parallel(steps, workers, |s: Step| s.run(headers_time));
    assert!(errors.is_empty(), "building the model libraries failed:\n{}", errors.join("\n"));

    // --- test programs, the static-link program, header checks -------------------------------
    let defines = [
        ("TVM_TEST_SOURCE_DIR", c_tests.clone()),
        ("TVM_TEST_BINARY_DIR", build.clone()),
        ("TVM_TEST_MLP_SO", build.join("mlp_model.so")),
        ("TVM_TEST_KERNELS_SO", build.join("test_kernels.so")),
        ("TVM_TEST_SEED004_SO", build.join("seed004_model.so")),
        ("TVM_TEST_ADDONE_SO", build.join("addone.so")),
        ("TVM_TEST_MLP_DATA_DIR", repo.join("tests/data/tvm-0.18/mlp")),
        ("TVM_TEST_SEED004_DATA_DIR", repo.join("tests/data/tvm-0.18/seed004")),
        ("TVM_TEST_RELAX_DATA_DIR", repo.join("tests/data/relax-0.18")),
        ("TVM_TEST_OPENCL_018_DIR", repo.join("../shared/tvm-data/opencl-0.18")),
        ("TVM_TEST_OPENCL_027_DIR", repo.join("tests/data/opencl-0.27")),
    ];
    let tests = find_tests(&c_tests);
    assert!(tests.iter().any(|t| t.cxx_std.is_some()), "no C++ tests found in {}", c_tests.display());
    let mut steps = Vec::new();
    for t in &tests {
        let output = build.join(&t.name);
        let mut step = match t.cxx_std {
            None => {
                let mut s = Step::new(format!("test program {}", t.name), output, &cc);
                s.cmd.arg("-std=gnu11");
                s
            }
            Some(std) => {
                let mut s = Step::new(format!("test program {}", t.name), output, &cxx);
                s.cmd.arg(format!("-std={std}"));
                s
            }
        };
        // tvm-ffi's own headers (c_tests/third_party) first: their DLPack is the newer one.
        let ffi_include = c_tests.join("third_party/tvm_ffi/include");
        step.cmd.args(["-O1", "-g", "-pthread"]).args(WARNINGS).arg("-I").arg(&c_tests).arg("-I").arg(&ffi_include);
        step.cmd.arg("-I").arg(&include);
        for (name, value) in &defines {
            step.cmd.arg(format!("-D{name}=\"{}\"", value.display()));
        }
        step.cmd.arg(&t.source);
        step.inputs.push(t.source.clone());
        for (_, obj) in extra_objects.iter().filter(|(stem, _)| *stem == t.stem) {
            step.cmd.arg(obj);
            step.inputs.push(obj.clone());
        }
        step.cmd.arg("-L").arg(&lib_dir).arg("-ltvm_runtime").arg(format!("-Wl,-rpath,{}", lib_dir.display()));
        step.cmd.args(["-ldl", "-lm"]);
        step.inputs.push(shared_lib.clone());
        steps.push(step);
    }
    {
        let source = c_tests.join("static_link/main.c");
        let mut step = Step::new("static_link", build.join("static_link"), &cc);
        step.cmd.args(["-std=gnu11", "-O1", "-pthread"]).args(WARNINGS).arg("-I").arg(&include).arg(&source);
        step.cmd.arg(&static_lib).args(["-lstdc++", "-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"]);
        step.inputs.extend([source, static_lib.clone()]);
        steps.push(step);
    }
    let checks = build.join("header_checks");
    std::fs::create_dir_all(&checks).unwrap();
    let cxx_headers: Vec<String> = {
        let dir = include.join("tvm/runtime");
        let mut v = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "h") {
                    let rel = p.strip_prefix(&include).unwrap().to_string_lossy().into_owned();
                    if !C_HEADERS.contains(&rel.as_str()) {
                        v.push(rel);
                    }
                }
            }
        }
        v.sort();
        v
    };
    let header_jobs = C_HEADERS
        .iter()
        .flat_map(|h| [(h.to_string(), "c", "-std=c99"), (h.to_string(), "cpp", "-std=c++11")])
        .chain(cxx_headers.iter().flat_map(|h| [(h.clone(), "cpp", "-std=c++14"), (h.clone(), "cpp", "-std=c++17")]));
    for (header, ext, std) in header_jobs {
        let id: String = header.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        let source = checks.join(format!("{id}{}.{ext}", std.replace(['-', '=', '+'], "_")));
        let text =
            format!("/* <{header}> must compile on its own (twice). */\n#include <{header}>\n#include <{header}>\n");
        if std::fs::read_to_string(&source).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&source, &text).unwrap();
        }
        let program = if ext == "c" { &cc } else { &cxx };
        let mut step = Step::new(format!("header check <{header}> {std}"), source.with_extension("o"), program);
        step.cmd.args(["-c", std, "-pedantic"]).args(WARNINGS).arg("-I").arg(&include).arg(&source);
        step.inputs.push(source);
        steps.push(step);
    }
    let errors = run_parallel(steps, workers, |s: Step| s.run(headers_time));
    assert!(errors.is_empty(), "building the C/C++ tests failed:\n{}", errors.join("\n"));

    // --- run ---------------------------------------------------------------------------------
    // cargo puts target/<profile> on LD_LIBRARY_PATH, which beats the programs' RUNPATH: a stale
    // uplifted libtvm_runtime.so there would be tested instead of this build's. Put ours first.
    let ld_path = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(old) => {
            let mut paths = vec![lib_dir.clone()];
            paths.extend(std::env::split_paths(&old));
            std::env::join_paths(paths).expect("library paths join")
        }
        None => lib_dir.clone().into_os_string(),
    };
    let mut programs: Vec<String> = tests.iter().map(|t| t.name.clone()).collect();
    programs.push("static_link".into());
    let passed = Mutex::new(Vec::new());
    let errors = run_parallel(programs, 2, |name: String| {
        let output = run_test(&build.join(&name), &build, &ld_path)?;
        passed.lock().unwrap().push(format!("{name}: {}", output.lines().last().unwrap_or("").trim()));
        Ok(())
    });
    for line in passed.into_inner().unwrap() {
        println!("ok  {line}");
    }
    assert!(errors.is_empty(), "{} C/C++ test program(s) failed:\n{}", errors.len(), errors.join("\n\n"));
}
