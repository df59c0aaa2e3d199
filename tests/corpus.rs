//! The malformed-input corpus (`tests/corpus/`, described in its README.md) run through the C API.
//!
//! Every row of `tests/corpus/cases.tsv` is one case (the `truncate-*` rows expand into one case
//! per cut of a real TVM artifact or of a built library). A case must fail with -1 and a `Kind: message` error that
//! contains the expected substring (or succeed, for the documented `ok` cases), and after it a
//! valid mlp run in the same process must still give TVM's numbers.
//!
//! The cases run in a child process (this test binary again, test `corpus_child`), so that a
//! case that crashes the runtime is reported by name and the remaining cases still run.

mod common;
#[path = "../examples/demo/model.rs"]
mod model;
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::PathBuf;
use std::process::Command;
use std::ptr::{null, null_mut};
use tvm_runtime::abi::{type_code as tc, DLDataType, DLDevice, DLManagedTensor, DLTensor, TVMByteArray, TVMValue};
use tvm_runtime::ffi::graph_executor::*;
use tvm_runtime::ffi::legacy::array::*;
use tvm_runtime::ffi::legacy::backend::TVMBackendGetFuncFromEnv;
use tvm_runtime::ffi::legacy::device::*;
use tvm_runtime::ffi::legacy::error::TVMAPISetLastError;
use tvm_runtime::ffi::legacy::func::*;
use tvm_runtime::ffi::legacy::module::*;
use tvm_runtime::ffi::legacy::object::*;

const CHILD_ENV: &str = "TVM_RUNTIME_CORPUS_CHILD";
/// Set (with CHILD_ENV) to make the child print every outcome; see tests/corpus/README.md.
const VERBOSE_ENV: &str = "TVM_RUNTIME_CORPUS_VERBOSE";
const F32: DLDataType = DLDataType::FLOAT32;
const CPU: DLDevice = DLDevice { device_type: 1, device_id: 0 };
const CUDA: DLDevice = DLDevice { device_type: 2, device_id: 0 };

// ---------------------------------------------------------------------------------------------
// The table and its expansion into cases
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Input {
    /// A checked-in file of the corpus.
    File(PathBuf),
    /// Bytes generated from a recipe (truncations).
    Bytes(Vec<u8>),
    /// The first `.1` bytes of a file (truncations of a library).
    Prefix(PathBuf, usize),
    /// A function of this file (`api_case`).
    Recipe(String),
}

#[derive(Clone, Debug)]
struct Case {
    id: String,
    kind: String,
    input: Input,
    expected: String,
}

impl Case {
    fn bytes(&self) -> Vec<u8> {
        match &self.input {
            Input::File(p) => std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
            Input::Bytes(b) => b.clone(),
            Input::Prefix(p, n) => {
                let mut b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                b.truncate(*n);
                b
            }
            Input::Recipe(_) => panic!("{}: a recipe has no bytes", self.id),
        }
    }
}

fn corpus_dir() -> PathBuf {
    repo().join("tests/corpus")
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(corpus_dir().join("cases.tsv")).expect("tests/corpus/cases.tsv");
    let mut out = Vec::new();
    let mut header = false;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 4, "cases.tsv line {}: expected 4 tab-separated columns", n + 1);
        if !header {
            assert_eq!(cols, ["id", "kind", "file_or_recipe", "expected"], "cases.tsv header");
            header = true;
            continue;
        }
        let (id, kind, source, expected) = (cols[0], cols[1], cols[2], cols[3]);
        assert!(
            matches!(kind, "graph" | "params" | "params_bind" | "mblob" | "library" | "api"),
            "cases.tsv line {}: unknown kind `{kind}`",
            n + 1
        );
        assert!(!expected.is_empty(), "cases.tsv line {}: empty expectation", n + 1);
        if let Some(artifact) = source.strip_prefix("truncate-fields:") {
            assert_eq!(expected, "@field-model", "{id}");
            let data = std::fs::read(repo().join("tests/data").join(artifact)).unwrap();
            match kind {
                "params" => {
                    let fields = params_fields(&data);
                    for cut in cuts(&fields, data.len(), true) {
                        out.push(Case {
                            id: format!("{id}@{cut}"),
                            kind: kind.into(),
                            input: Input::Bytes(data[..cut].to_vec()),
                            expected: expected_at(&fields, cut),
                        });
                    }
                }
                "mblob" => {
                    let payload = &data[8..];
                    let fields = mblob_fields(payload);
                    for cut in cuts(&fields, payload.len(), false) {
                        let mut blob = (cut as u64).to_le_bytes().to_vec();
                        blob.extend_from_slice(&payload[..cut]);
                        out.push(Case {
                            id: format!("{id}@{cut}"),
                            kind: kind.into(),
                            input: Input::Bytes(blob),
                            expected: expected_at(&fields, cut),
                        });
                    }
                }
                _ => panic!("{id}: truncate-fields is for params and mblob rows"),
            }
        } else if let Some(name) = source.strip_prefix("truncate-elf:") {
            assert_eq!((kind, expected), ("library", "@elf-model"), "{id}");
            let path = elf_library(name);
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{id}: {}: {e}", path.display()));
            let fields = elf_fields(&data);
            for cut in elf_cuts(&fields, data.len()) {
                out.push(Case {
                    id: format!("{id}@{cut}"),
                    kind: kind.into(),
                    input: Input::Prefix(path.clone(), cut),
                    expected: elf_expected_at(&fields, cut),
                });
            }
        } else if let Some(recipe) = source.strip_prefix("recipe:") {
            out.push(Case {
                id: id.into(),
                kind: kind.into(),
                input: Input::Recipe(recipe.into()),
                expected: expected.into(),
            });
        } else {
            let path = corpus_dir().join(source);
            assert!(path.is_file(), "{id}: {} does not exist", path.display());
            out.push(Case { id: id.into(), kind: kind.into(), input: Input::File(path), expected: expected.into() });
        }
    }
    let ids: BTreeSet<&str> = out.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), out.len(), "case ids must be unique");
    out
}

// ---- field model for truncation cases ----

/// One field of a binary artifact as the runtime's reader names it. Counts carry their value
/// and the minimum bytes per item the reader requires to remain (it checks before reading on).
#[derive(Debug)]
struct Field {
    off: usize,
    len: usize,
    name: String,
    count: Option<(u64, usize)>,
}

struct Walk<'a> {
    d: &'a [u8],
    pos: usize,
    fields: Vec<Field>,
}

impl<'a> Walk<'a> {
    fn new(d: &'a [u8]) -> Self {
        Walk { d, pos: 0, fields: Vec::new() }
    }
    fn take(&mut self, n: usize, name: &str) -> &'a [u8] {
        let s = &self.d[self.pos..self.pos + n];
        self.fields.push(Field { off: self.pos, len: n, name: name.into(), count: None });
        self.pos += n;
        s
    }
    fn u64(&mut self, name: &str) -> u64 {
        u64::from_le_bytes(self.take(8, name).try_into().unwrap())
    }
    fn i64(&mut self, name: &str) -> i64 {
        self.u64(name) as i64
    }
    fn i32(&mut self, name: &str) -> i32 {
        i32::from_le_bytes(self.take(4, name).try_into().unwrap())
    }
    fn count(&mut self, name: &str, min_item: usize) -> u64 {
        let v = self.u64(name);
        self.fields.last_mut().unwrap().count = Some((v, min_item));
        v
    }
    fn string(&mut self, name: &str) -> Vec<u8> {
        let n = self.count(name, 1) as usize;
        self.take(n, name).to_vec()
    }
    fn strings(&mut self, name: &str) -> Vec<Vec<u8>> {
        let n = self.count(name, 8);
        (0..n).map(|i| self.string(&format!("{name}[{i}]"))).collect()
    }
    fn u64s(&mut self, name: &str) {
        let n = self.count(name, 8);
        for _ in 0..n {
            self.u64(name);
        }
    }
    /// An NDArray record (TVM's `NDArray::Save` layout).
    fn record(&mut self) {
        self.u64("NDArray magic");
        self.u64("NDArray reserved field");
        self.i32("device type");
        self.i32("device id");
        let ndim = self.i32("ndim");
        self.take(1, "dtype code");
        self.take(1, "dtype bits");
        self.take(2, "dtype lanes");
        for _ in 0..ndim {
            self.i64("shape");
        }
        let size = self.i64("data byte size");
        self.take(size as usize, "tensor data");
    }
}

/// Fields of a params file: magic, reserved, names, count, records.
fn params_fields(d: &[u8]) -> Vec<Field> {
    let mut w = Walk::new(d);
    w.u64("params magic");
    w.u64("params reserved field");
    w.strings("param names");
    let n = w.count("param count", 40);
    for _ in 0..n {
        w.record();
    }
    assert_eq!(w.pos, d.len(), "params walk must cover the file");
    w.fields
}

/// Fields of a module blob's payload (after the u64 length prefix).
fn mblob_fields(payload: &[u8]) -> Vec<Field> {
    let mut w = Walk::new(payload);
    let n = w.count("module count", 8);
    for i in 0..n {
        let key = w.string(&format!("type key of entry {i}"));
        match key.as_slice() {
            b"GraphExecutorFactory" => {
                w.string("graph JSON");
                let n = w.count("param count", 40);
                w.strings("param names");
                for _ in 0..n {
                    w.record();
                }
                w.string("module name");
            }
            b"_lib" => {}
            b"_import_tree" => {
                w.u64s("import tree row_ptr");
                w.u64s("import tree child_indices");
            }
            k => panic!("unexpected blob entry {}", String::from_utf8_lossy(k)),
        }
    }
    assert_eq!(w.pos, payload.len(), "blob walk must cover the payload");
    w.fields
}

/// Cut points: every field start, and (with `mid`) the middle of every multi-byte field.
fn cuts(fields: &[Field], total: usize, mid: bool) -> Vec<usize> {
    let mut s = BTreeSet::new();
    for f in fields {
        s.insert(f.off);
        if mid && f.len > 1 {
            s.insert(f.off + f.len / 2);
        }
    }
    s.into_iter().filter(|&c| c < total).collect()
}

/// What the reader must report when the data ends at `cut`: the first count that no longer
/// fits what remains, or else the first field that is incomplete.
fn expected_at(fields: &[Field], cut: usize) -> String {
    for f in fields {
        if f.off + f.len > cut {
            return format!("truncated while reading {}", f.name);
        }
        if let Some((n, min)) = f.count {
            let remaining = cut - (f.off + 8);
            if n > (remaining / min) as u64 {
                return format!("{} is {n}, but only", f.name);
            }
        }
    }
    unreachable!("a cut before the end leaves some field incomplete")
}

// ---- layout model for truncated libraries ----

/// The parts of an ELF64 little-endian library the runtime checks before dlopen, in the order
/// it checks them: the header, the program header table, each segment with file bytes (in
/// table order), the section header table.
fn elf_fields(d: &[u8]) -> Vec<Field> {
    let u16_at = |at: usize| u16::from_le_bytes(d[at..at + 2].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(d[at..at + 8].try_into().unwrap()) as usize;
    assert!(d.starts_with(b"\x7fELF\x02\x01"), "the sweep's libraries are ELF64 little-endian");
    let field = |off, len, name: &str| Field { off, len, name: name.into(), count: None };
    let (phoff, phnum, shoff, shnum) = (u64_at(32), u16_at(56), u64_at(40), u16_at(60));
    let mut fields = vec![field(0, 64, "ELF header"), field(phoff, phnum * 56, "program header table")];
    for i in 0..phnum {
        let p = phoff + i * 56;
        let (off, size) = (u64_at(p + 8), u64_at(p + 32));
        if size > 0 {
            fields.push(field(off, size, &format!("program header {i}")));
        }
    }
    fields.push(field(shoff, shnum * 64, "section header table"));
    assert_eq!(shoff + shnum * 64, d.len(), "the section headers end the file");
    fields
}

/// Cut points: the start, middle and last byte of every part, and every 1/32 of the file.
fn elf_cuts(fields: &[Field], total: usize) -> Vec<usize> {
    let mut s: BTreeSet<usize> = (0..32).map(|k| k * total / 32).collect();
    for f in fields {
        s.extend([f.off, f.off + 1, f.off + f.len / 2, (f.off + f.len).saturating_sub(1)]);
    }
    s.into_iter().filter(|&c| c < total).collect()
}

/// What the check must report when the library ends at `cut`: a header too short, else the
/// first part (in checking order) that reaches past the end, with its byte range.
fn elf_expected_at(fields: &[Field], cut: usize) -> String {
    if cut < 64 {
        return format!("the file is {cut} bytes, too short for an ELF header");
    }
    let f = fields.iter().find(|f| f.off + f.len > cut).expect("a cut before the end leaves some part incomplete");
    format!("(file bytes {}..{}) extends past the end of the file ({cut} bytes)", f.off, f.off + f.len)
}

// ---------------------------------------------------------------------------------------------
// Build artifacts (parent) and where they live (both)
// ---------------------------------------------------------------------------------------------

fn work_dir() -> PathBuf {
    scratch("corpus")
}
fn kernels_o() -> PathBuf {
    work_dir().join("kernels.o")
}
fn kernels_so() -> PathBuf {
    work_dir().join("kernels.so")
}
fn mlp_so() -> PathBuf {
    work_dir().join("mlp.so")
}
/// `id` as a file name.
fn file_name(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}
fn blob_so(id: &str) -> PathBuf {
    work_dir().join("mblob").join(format!("{}.so", file_name(id)))
}
/// A whole library the `truncate-elf:<name>` rows cut (built by [`build_libraries`]).
fn elf_library(name: &str) -> PathBuf {
    work_dir().join(format!("{name}.so"))
}

/// `build_so(out, [kernels.o], blob)`, skipped when `out` was built from the same kernel object
/// and blob (a `.key` file beside it records a hash of both, written after a successful build).
fn cached_build(out: &std::path::Path, kernels_object: &[u8], blob: Option<&[u8]>) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    kernels_object.hash(&mut h);
    blob.hash(&mut h);
    let key = format!("{:016x}", h.finish());
    let key_file = out.with_extension("key");
    if out.is_file() && std::fs::read_to_string(&key_file).is_ok_and(|k| k == key) {
        return;
    }
    let _ = std::fs::remove_file(&key_file);
    build_so(out, &[kernels_o()], blob);
    std::fs::write(&key_file, key).unwrap();
}

/// kernels.c is compiled once to an object; every library links that object with its blob.
/// These libraries come first: the truncation rows are expanded from them.
fn build_libraries() {
    std::fs::create_dir_all(work_dir().join("mblob")).unwrap();
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-c", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-I"])
        .arg(repo().join("include"))
        .arg(kernels_c())
        .arg("-o")
        .arg(kernels_o())
        .status()
        .expect("a C compiler (cc) must be installed");
    assert!(status.success(), "compiling kernels.c failed");
    let kernels = std::fs::read(kernels_o()).unwrap();
    cached_build(&kernels_so(), &kernels, None);
    cached_build(&mlp_so(), &kernels, Some(&tvm_data("mlp", "mblob.bin")));
    cached_build(&elf_library("chain500"), &kernels, Some(&tvm_data("chain500", "mblob.bin")));
    let demo = model::build().unwrap_or_else(|e| panic!("building the demo model: {e}"));
    std::fs::copy(demo, elf_library("demo")).unwrap();
}

/// One library per mblob case: its blob linked with the kernel object.
fn build_blob_libraries(cases: &[Case]) {
    let kernels = std::fs::read(kernels_o()).unwrap();
    let jobs: Vec<&Case> = cases.iter().filter(|c| c.kind == "mblob").collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Compiler runs are mostly process start-up and I/O: more jobs than cores still help.
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get() * 4).clamp(4, 16);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(c) = jobs.get(i) else { break };
                let blob = c.bytes();
                cached_build(&blob_so(&c.id), &kernels, Some(&blob));
            });
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Parent: run the cases in child processes, restart after a crash, report
// ---------------------------------------------------------------------------------------------

#[test]
fn corpus() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let t0 = std::time::Instant::now();
    build_libraries();
    let cases = cases();
    build_blob_libraries(&cases);
    let built = t0.elapsed();
    let mut results: Vec<Option<Result<(), String>>> = vec![None; cases.len()];
    let mut start = 0;
    let mut children = 0;
    while start < cases.len() {
        children += 1;
        let run = run_child(start);
        let mut last_started = None;
        let mut done = false;
        for line in &run.lines {
            // libtest prints `test corpus_child ... ` without a newline before the first line.
            let Some(at) = line.find("@@") else { continue };
            let mut parts = line[at..].splitn(3, '\t');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("@@START"), Some(i), _) => last_started = Some(i.parse::<usize>().unwrap()),
                (Some("@@PASS"), Some(i), _) => results[i.parse::<usize>().unwrap()] = Some(Ok(())),
                (Some("@@FAIL"), Some(i), Some(why)) => {
                    results[i.parse::<usize>().unwrap()] = Some(Err(why.to_string()))
                }
                (Some("@@SETUP"), Some(why), _) => panic!("corpus child setup failed: {why}"),
                (Some("@@DONE"), _, _) => done = true,
                _ => {}
            }
        }
        if done {
            break;
        }
        let tail: String = run.stderr.chars().rev().take(600).collect::<Vec<_>>().into_iter().rev().collect();
        match last_started {
            Some(i) => {
                if results[i].is_none() {
                    let how = if run.hung {
                        format!(
                            "the case hung; the process was killed after {} s without output",
                            CASE_TIMEOUT.as_secs()
                        )
                    } else {
                        format!("the process died during this case ({})", run.status)
                    };
                    results[i] = Some(Err(format!("{how}; stderr tail: {}", tail.replace('\n', " | "))));
                }
                start = i + 1;
            }
            None => panic!(
                "corpus child died before running a case ({}):\n{}\n{}",
                run.status,
                run.lines.join("\n"),
                run.stderr
            ),
        }
    }

    let mut per_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for (c, r) in cases.iter().zip(&results) {
        let e = per_kind.entry(c.kind.as_str()).or_default();
        e.0 += 1;
        match r {
            Some(Ok(())) => e.1 += 1,
            Some(Err(why)) => failures.push(format!("{} [{}]: {why}", c.id, c.kind)),
            None => failures.push(format!("{} [{}]: did not run", c.id, c.kind)),
        }
    }
    let summary: Vec<String> = per_kind.iter().map(|(k, (n, p))| format!("{k} {p}/{n}")).collect();
    println!(
        "corpus: {} cases, {} passed, {} failed (per kind, passed/total: {}); build {:.1}s, total {:.1}s, {} child process(es)",
        cases.len(),
        cases.len() - failures.len(),
        failures.len(),
        summary.join(", "),
        built.as_secs_f64(),
        t0.elapsed().as_secs_f64(),
        children
    );
    if !failures.is_empty() {
        panic!("{} corpus case(s) failed:\n  {}", failures.len(), failures.join("\n  "));
    }
}

/// How long one case may run before its process is killed as hung.
const CASE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

struct ChildRun {
    lines: Vec<String>,
    stderr: String,
    status: String,
    hung: bool,
}

/// Run the child from case `start`, killing it when no line arrives within CASE_TIMEOUT.
fn run_child(start: usize) -> ChildRun {
    use std::io::{BufRead, Read};
    use std::sync::mpsc;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["corpus_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, start.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the corpus child");
    let stdout = child.stdout.take().unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(stdout);
        let mut buf = Vec::new();
        while r.read_until(b'\n', &mut buf).is_ok_and(|n| n > 0) {
            let line = String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_string();
            buf.clear();
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr_pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    });
    let mut lines = Vec::new();
    let mut hung = false;
    loop {
        match rx.recv_timeout(CASE_TIMEOUT) {
            Ok(line) => lines.push(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                hung = true;
                let _ = child.kill();
                break;
            }
        }
    }
    let status = child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
    let _ = reader.join();
    lines.extend(rx.try_iter());
    ChildRun { lines, stderr: err_reader.join().unwrap_or_default(), status, hung }
}

// ---------------------------------------------------------------------------------------------
// Child: run cases in order from the index given by the parent
// ---------------------------------------------------------------------------------------------

#[test]
fn corpus_child() {
    let Ok(start) = std::env::var(CHILD_ENV) else { return };
    let start: usize = start.parse().unwrap();
    let cases = cases();
    let mut ctx = match std::panic::catch_unwind(Ctx::new) {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return println!("@@SETUP\t{}", one_line(&e)),
        Err(_) => return println!("@@SETUP\tpanic while setting up"),
    };
    for (i, case) in cases.iter().enumerate().skip(start) {
        println!("@@START\t{i}");
        if std::env::var_os(VERBOSE_ENV).is_some() {
            println!("  {} [{}] expects `{}`", case.id, case.kind, case.expected);
        }
        let r =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(&mut ctx, case))).unwrap_or_else(|p| {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                Err(format!("harness panic: {}", msg.unwrap_or_default()))
            });
        match r {
            Ok(()) => println!("@@PASS\t{i}"),
            Err(e) => println!("@@FAIL\t{i}\t{}", one_line(&e)),
        }
    }
    println!("@@DONE");
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\t'], " ")
}

/// A runtime failure: (return code, last error).
type R<T = ()> = Result<T, (i32, String)>;

fn st(rc: c_int) -> R {
    if rc == 0 {
        Ok(())
    } else {
        Err((rc, last_error()))
    }
}

/// The error a harness step reports itself (never expected by a case).
fn harness(msg: impl Into<String>) -> (i32, String) {
    (-1, format!("HarnessError: {}", msg.into()))
}

/// `Kind: message`, as TVM's frontends parse it.
fn has_kind(m: &str) -> bool {
    m.split_once(": ").is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// An error kind repeated inside the message (`ValueError: a: ValueError: b`): an error's full
/// text was embedded in another error instead of its message. The thread pool's
/// `Task <i> error: <the task's error>` quotes a whole error on purpose and is allowed.
fn nested_kind(m: &str) -> Option<&'static str> {
    const KINDS: [&str; 10] = [
        "ValueError",
        "TypeError",
        "IndexError",
        "KeyError",
        "AttributeError",
        "InternalError",
        "TVMError",
        "NotImplementedError",
        "OSError",
        "RuntimeError",
    ];
    let (_, rest) = m.split_once(": ")?;
    KINDS.into_iter().find(|k| rest.match_indices(&format!("{k}: ")).any(|(at, _)| !quotes_task_error(&rest[..at])))
}

/// Whether `before` ends with `Task <digits> error: `.
fn quotes_task_error(before: &str) -> bool {
    let Some(head) = before.strip_suffix(" error: ") else { return false };
    head.rsplit_once("Task ").is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn close(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 1e-5 * (1.0 + w.abs()))
}

/// Compare one path's outcome with the expectation (see tests/corpus/README.md).
fn judge(path: &str, expected: &str, got: &R<Vec<f32>>, want: &[f32]) -> Result<(), String> {
    if std::env::var_os(VERBOSE_ENV).is_some() {
        match got {
            Ok(_) => println!("    {path}: ok"),
            Err((rc, m)) => println!("    {path}: {rc}: {}", one_line(m)),
        }
    }
    match (expected, got) {
        ("ok", Ok(_)) => Ok(()),
        ("ok:tvm", Ok(v)) if close(v, want) => Ok(()),
        ("ok:tvm", Ok(v)) => Err(format!("{path}: succeeded, but output {v:?} is not TVM's {want:?}")),
        ("ok" | "ok:tvm", Err((rc, m))) => Err(format!("{path}: expected success, got {rc}: {m}")),
        (_, Ok(_)) => Err(format!("{path}: expected an error containing `{expected}`, but it succeeded")),
        (_, Err((rc, m))) => {
            if *rc != -1 {
                Err(format!("{path}: returned {rc} instead of -1 ({m})"))
            } else if !has_kind(m) {
                Err(format!("{path}: the message lacks a `Kind: ` prefix: `{m}`"))
            } else if let Some(k) = nested_kind(m) {
                Err(format!("{path}: the message repeats an error kind inside (`{k}`): `{m}`"))
            } else if !m.contains(expected) {
                Err(format!("{path}: `{m}` does not contain `{expected}`"))
            } else {
                Ok(())
            }
        }
    }
}

// ---- tensors ----

/// A tensor over its own zeroed buffer: 64-byte aligned plus `skew` bytes, with slack after.
struct T {
    buf: Vec<u8>,
    shape: Vec<i64>,
    strides: Vec<i64>,
    t: DLTensor,
}

impl T {
    fn new(shape: &[i64], dtype: DLDataType, skew: usize) -> T {
        let n: i64 = shape.iter().product();
        let nbytes = n as usize * dtype.element_bytes();
        let buf = vec![0u8; nbytes + 256];
        let base = buf.as_ptr() as usize;
        let off = (64 - base % 64) % 64 + skew;
        let mut t = T {
            buf,
            shape: shape.to_vec(),
            strides: Vec::new(),
            t: DLTensor {
                data: null_mut(),
                device: CPU,
                ndim: shape.len() as i32,
                dtype,
                shape: null_mut(),
                strides: null_mut(),
                byte_offset: 0,
            },
        };
        t.t.data = unsafe { t.buf.as_mut_ptr().add(off) } as *mut c_void;
        t
    }
    fn f32(shape: &[i64], vals: &[f32]) -> T {
        let t = T::new(shape, F32, 0);
        let bytes = bytes_of(vals);
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), t.t.data as *mut u8, bytes.len()) };
        t
    }
    fn ptr(&mut self) -> *mut DLTensor {
        self.t.shape = self.shape.as_mut_ptr();
        self.t.strides = if self.strides.is_empty() { null_mut() } else { self.strides.as_mut_ptr() };
        &mut self.t
    }
    fn values(&self) -> Vec<f32> {
        let n: i64 = self.shape.iter().product();
        let s = unsafe { std::slice::from_raw_parts(self.t.data as *const u8, n as usize * 4) };
        f32s(s)
    }
}

// ---- packed calls ----

#[derive(Clone, Copy)]
enum V {
    Int(i64),
    Float(f64),
    Str(*const c_char),
    Bytes(*const TVMByteArray),
    Dev(DLDevice),
    Tensor(*mut DLTensor),
    Obj(*mut c_void, i32),
}

fn pcall(f: *mut c_void, args: &[V]) -> R<(TVMValue, i32)> {
    let mut vals: Vec<TVMValue> = Vec::new();
    let mut codes: Vec<c_int> = Vec::new();
    for a in args {
        let (v, c) = match *a {
            V::Int(i) => (TVMValue { v_int64: i }, tc::INT),
            V::Float(x) => (TVMValue { v_float64: x }, tc::FLOAT),
            V::Str(s) => (TVMValue { v_str: s }, tc::STR),
            V::Bytes(b) => (TVMValue { v_handle: b as *mut c_void }, tc::BYTES),
            V::Dev(d) => (TVMValue { v_device: d }, tc::DEVICE),
            V::Tensor(t) => (TVMValue { v_handle: t as *mut c_void }, tc::DLTENSOR_HANDLE),
            V::Obj(h, code) => (TVMValue { v_handle: h }, code),
        };
        vals.push(v);
        codes.push(c);
    }
    let mut ret = TVMValue::null();
    let mut code = 0;
    st(unsafe { TVMFuncCall(f, vals.as_mut_ptr(), codes.as_mut_ptr(), vals.len() as c_int, &mut ret, &mut code) })?;
    Ok((ret, code))
}

/// Release a returned value that holds a reference.
fn release(v: TVMValue, code: i32) {
    unsafe {
        match code {
            tc::MODULE_HANDLE => drop(TVMModFree(v.v_handle)),
            tc::PACKED_FUNC_HANDLE => drop(TVMFuncFree(v.v_handle)),
            tc::OBJECT_HANDLE => drop(TVMObjectFree(v.v_handle)),
            tc::NDARRAY_HANDLE => drop(TVMArrayFree(v.v_handle as *mut DLTensor)),
            _ => {}
        }
    }
}

fn bytes_arg(b: &[u8]) -> Box<TVMByteArray> {
    Box::new(TVMByteArray { data: b.as_ptr() as *const c_char, size: b.len() })
}

/// A function of module `m` (searching imports), or NULL.
fn func_of(m: *mut c_void, name: &str) -> R<Option<Func>> {
    let n = CString::new(name).unwrap();
    let mut f = null_mut();
    st(unsafe { TVMModGetFunction(m, n.as_ptr(), 1, &mut f) })?;
    Ok((!f.is_null()).then_some(Func(f)))
}

fn mcall(m: *mut c_void, name: &str, args: &[V]) -> R<(TVMValue, i32)> {
    let f = func_of(m, name)?.ok_or_else(|| harness(format!("module has no function `{name}`")))?;
    pcall(f.0, args)
}

/// Free-on-drop C executor handle.
struct Exec(*mut TVMGraphExecutor);
impl Drop for Exec {
    fn drop(&mut self) {
        unsafe { TVMGraphExecutorFree(self.0) };
    }
}

// ---- shared state and the reference runs ----

struct Ctx {
    kernels: Mod,
    factory: Mod,
    /// mlp's graph JSON, NUL-terminated.
    json: Vec<u8>,
    params: Vec<u8>,
    x: Vec<f32>,
    want: Vec<f32>,
    /// C API executor: mlp JSON + kernels + params.
    g: Exec,
    /// Module executor: tvm.graph_executor.create + load_params.
    m: Mod,
    create: Func,
    load_params: Func,
}

impl Ctx {
    fn new() -> Result<Ctx, String> {
        let kernels = load_module(&kernels_so())?;
        let factory = load_module(&mlp_so())?;
        let mut json = tvm_data("mlp", "graph.json");
        json.push(0);
        let mut ctx = Ctx {
            kernels,
            factory,
            json,
            params: tvm_data("mlp", "params.bin"),
            x: f32s(&tvm_data("mlp", "input_x.bin")),
            want: f32s(&tvm_data("mlp", "output_0.bin")),
            g: Exec(null_mut()),
            m: Mod(null_mut()),
            create: global("tvm.graph_executor.create"),
            load_params: global("runtime.LoadParams"),
        };
        ctx.rebuild_references().map_err(|(_, m)| m)?;
        Ok(ctx)
    }

    fn rebuild_references(&mut self) -> R {
        let mut g = null_mut();
        st(unsafe { TVMGraphExecutorCreate(self.json.as_ptr() as _, self.kernels.0, &CPU, 1, &mut g) })?;
        self.g = Exec(g);
        st(unsafe { TVMGraphExecutorLoadParams(g, self.params.as_ptr() as _, self.params.len()) })?;
        self.m = self.packed_executor(&self.json.clone())?;
        let p = bytes_arg(&self.params);
        mcall(self.m.0, "load_params", &[V::Bytes(&*p)])?;
        Ok(())
    }

    /// tvm.graph_executor.create(json, kernels, cpu) as a module.
    fn packed_executor(&self, json: &[u8]) -> R<Mod> {
        let (v, code) = pcall(
            self.create.0,
            &[V::Str(json.as_ptr() as _), V::Obj(self.kernels.0, tc::MODULE_HANDLE), V::Int(1), V::Int(0)],
        )?;
        if code != tc::MODULE_HANDLE {
            release(v, code);
            return Err(harness(format!("tvm.graph_executor.create returned type code {code}")));
        }
        Ok(Mod(unsafe { v.v_handle }))
    }

    /// A fresh C executor from the mlp factory.
    fn factory_exec(&self) -> R<Exec> {
        let mut g = null_mut();
        st(unsafe { TVMGraphExecutorCreateFromFactory(self.factory.0, &CPU, 1, &mut g) })?;
        Ok(Exec(g))
    }

    /// set x, run, get output 0 through the C API.
    fn run_c(&self, g: *mut TVMGraphExecutor) -> R<Vec<f32>> {
        let mut x = T::f32(&[2, 8], &self.x);
        st(unsafe { TVMGraphExecutorSetInput(g, c"x".as_ptr(), x.ptr()) })?;
        st(unsafe { TVMGraphExecutorRun(g) })?;
        let mut out = T::new(&[2, 4], F32, 0);
        st(unsafe { TVMGraphExecutorGetOutput(g, 0, out.ptr()) })?;
        Ok(out.values())
    }

    /// The same through the executor module's functions.
    fn run_m(&self, m: *mut c_void) -> R<Vec<f32>> {
        let mut x = T::f32(&[2, 8], &self.x);
        mcall(m, "set_input", &[V::Str(c"x".as_ptr()), V::Tensor(x.ptr())])?;
        mcall(m, "run", &[])?;
        let mut out = T::new(&[2, 4], F32, 0);
        mcall(m, "get_output", &[V::Int(0), V::Tensor(out.ptr())])?;
        Ok(out.values())
    }

    /// Post-check: the named runs still give TVM's numbers.
    fn still_tvm(&self, what: &str, got: R<Vec<f32>>) -> Result<(), String> {
        match got {
            Ok(v) if close(&v, &self.want) => Ok(()),
            Ok(v) => Err(format!("after the case, {what} gives {v:?} instead of TVM's {:?}", self.want)),
            Err((rc, m)) => Err(format!("after the case, {what} fails ({rc}): {m}")),
        }
    }
}

fn run_case(ctx: &mut Ctx, case: &Case) -> Result<(), String> {
    let mut errs = Vec::new();
    match case.kind.as_str() {
        "graph" => {
            let mut json = case.bytes();
            json.push(0);
            let c = graph_c(ctx, &json);
            errs.extend(judge("TVMGraphExecutorCreate", &case.expected, &c, &ctx.want).err());
            let m = graph_m(ctx, &json);
            errs.extend(judge("tvm.graph_executor.create", &case.expected, &m, &ctx.want).err());
            errs.extend(ctx.still_tvm("a fresh TVMGraphExecutorCreate executor", graph_c(ctx, &ctx.json)).err());
            errs.extend(ctx.still_tvm("a fresh tvm.graph_executor.create executor", graph_m(ctx, &ctx.json)).err());
        }
        "params" | "params_bind" => {
            let data = case.bytes();
            let c = st(unsafe { TVMGraphExecutorLoadParams(ctx.g.0, data.as_ptr() as _, data.len()) }).map(|_| vec![]);
            errs.extend(judge("TVMGraphExecutorLoadParams", &case.expected, &c, &ctx.want).err());
            let arr = bytes_arg(&data);
            let m = mcall(ctx.m.0, "load_params", &[V::Bytes(&*arr)]).map(|_| vec![]);
            errs.extend(judge("executor module load_params", &case.expected, &m, &ctx.want).err());
            let parse_expect = if case.kind == "params" { case.expected.as_str() } else { "ok" };
            let p = pcall(ctx.load_params.0, &[V::Bytes(&*arr)]).map(|(v, code)| {
                release(v, code);
                vec![]
            });
            errs.extend(judge("runtime.LoadParams", parse_expect, &p, &ctx.want).err());
            // The same executors, not reloaded: a failed load must leave them as they were.
            let post: Vec<String> = [
                ctx.still_tvm("the C API executor", ctx.run_c(ctx.g.0)).err(),
                ctx.still_tvm("the module executor", ctx.run_m(ctx.m.0)).err(),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !post.is_empty() {
                errs.extend(post);
                ctx.rebuild_references().map_err(|(_, m)| format!("cannot rebuild the reference executors: {m}"))?;
            }
        }
        "mblob" => {
            let r = blob_run(ctx, case);
            errs.extend(judge("TVMModLoadFromFile + default(cpu)", &case.expected, &r, &ctx.want).err());
            let fresh = ctx.factory_exec().and_then(|g| ctx.run_c(g.0));
            errs.extend(ctx.still_tvm("a fresh executor of the good mlp.so", fresh).err());
        }
        "library" => {
            let (file, r) = library_load(case);
            errs.extend(judge("TVMModLoadFromFile", &case.expected, &r, &ctx.want).err());
            if r.as_ref().is_err_and(|(_, m)| !m.contains(&file)) {
                errs.push(format!("the error does not name the file `{file}`"));
            }
            let fresh = ctx.factory_exec().and_then(|g| ctx.run_c(g.0));
            errs.extend(ctx.still_tvm("a fresh executor of the good mlp.so", fresh).err());
        }
        "api" => {
            let Input::Recipe(recipe) = &case.input else { unreachable!() };
            let got = api_case(ctx, recipe).ok_or_else(|| format!("unknown recipe `{recipe}`"))?;
            errs.extend(judge(recipe, &case.expected, &got.map(|_| vec![]), &ctx.want).err());
            errs.extend(ctx.still_tvm("the C API executor", ctx.run_c(ctx.g.0)).err());
            errs.extend(ctx.still_tvm("the module executor", ctx.run_m(ctx.m.0)).err());
            let fresh = ctx.factory_exec().and_then(|g| ctx.run_c(g.0));
            errs.extend(ctx.still_tvm("a fresh factory executor", fresh).err());
            if errs.iter().any(|e| e.starts_with("after the case")) {
                ctx.rebuild_references().map_err(|(_, m)| format!("cannot rebuild the reference executors: {m}"))?;
            }
        }
        k => return Err(format!("unknown kind {k}")),
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

/// Graph JSON through TVMGraphExecutorCreate, then load params, set x, run, get output 0.
fn graph_c(ctx: &Ctx, json: &[u8]) -> R<Vec<f32>> {
    let mut g = null_mut();
    st(unsafe { TVMGraphExecutorCreate(json.as_ptr() as _, ctx.kernels.0, &CPU, 1, &mut g) })?;
    let g = Exec(g);
    st(unsafe { TVMGraphExecutorLoadParams(g.0, ctx.params.as_ptr() as _, ctx.params.len()) })?;
    ctx.run_c(g.0)
}

/// The same through tvm.graph_executor.create and the executor module's functions.
fn graph_m(ctx: &Ctx, json: &[u8]) -> R<Vec<f32>> {
    let m = ctx.packed_executor(json)?;
    let p = bytes_arg(&ctx.params);
    mcall(m.0, "load_params", &[V::Bytes(&*p)])?;
    ctx.run_m(m.0)
}

/// Load the case's library, call `default(cpu)` (found through imports, as TVM's frontends do)
/// and run the executor it returns.
fn blob_run(ctx: &Ctx, case: &Case) -> R<Vec<f32>> {
    let path = CString::new(blob_so(&case.id).to_str().unwrap()).unwrap();
    let mut m = null_mut();
    st(unsafe { TVMModLoadFromFile(path.as_ptr(), c"".as_ptr(), &mut m) })?;
    let m = Mod(m);
    let f =
        func_of(m.0, "default")?.ok_or_else(|| harness("no function `default` in the loaded module or its imports"))?;
    let (v, code) = pcall(f.0, &[V::Dev(CPU)])?;
    if code != tc::MODULE_HANDLE {
        release(v, code);
        return Err(harness(format!("default(cpu) returned type code {code}")));
    }
    let exec = Mod(unsafe { v.v_handle });
    ctx.run_m(exec.0)
}

/// Write the case's bytes to a new file (a library still mapped must never be rewritten in
/// place) and load it with TVMModLoadFromFile; the file is removed afterwards.
fn library_load(case: &Case) -> (String, R<Vec<f32>>) {
    let dir = work_dir().join("library");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{}.so", file_name(&case.id)));
    std::fs::write(&file, case.bytes()).unwrap();
    let name = file.to_str().unwrap().to_string();
    let path = CString::new(name.clone()).unwrap();
    let mut m = null_mut();
    let r = st(unsafe { TVMModLoadFromFile(path.as_ptr(), c"".as_ptr(), &mut m) }).map(|_| {
        drop(Mod(m));
        vec![]
    });
    let _ = std::fs::remove_file(&file);
    (name, r)
}

// ---------------------------------------------------------------------------------------------
// API misuse recipes
// ---------------------------------------------------------------------------------------------

/// A void CRT function fails when it replaces a sentinel last error.
fn void_call(f: impl FnOnce()) -> R {
    unsafe { TVMAPISetLastError(c"corpus-sentinel".as_ptr()) };
    f();
    let e = last_error();
    if e.contains("corpus-sentinel") {
        Ok(())
    } else {
        Err((-1, e))
    }
}

/// A CRT function returning a value or -1.
fn value_call(v: c_int) -> R {
    if v == -1 {
        Err((-1, last_error()))
    } else {
        Ok(())
    }
}

/// A lookup that must find nothing (NULL, or an error naming the symbol).
fn must_not_find(m: *mut c_void, name: &str) -> R {
    let n = CString::new(name).unwrap();
    let mut f = null_mut();
    let rc = unsafe { TVMModGetFunction(m, n.as_ptr(), 0, &mut f) };
    if rc != 0 {
        let e = last_error();
        return if e.contains(name) { Ok(()) } else { Err((rc, e)) };
    }
    if f.is_null() {
        return Ok(());
    }
    unsafe { TVMFuncFree(f) };
    Err(harness(format!(
        "TVMModGetFunction returned a callable function for `{name}`, which is not a kernel of the library \
         (calling it would jump into data or into libc)"
    )))
}

fn api_case(ctx: &Ctx, recipe: &str) -> Option<R> {
    let g = ctx.g.0;
    let kern = ctx.kernels.0;
    let json = ctx.json.as_ptr() as *const c_char;
    let x = || T::f32(&[2, 8], &ctx.x);
    let zeros = |shape: &[i64], dtype: DLDataType| T::new(shape, dtype, 0);
    let fresh = || ctx.factory_exec();
    let m = ctx.m.0;
    let mut ge: *mut TVMGraphExecutor = null_mut();
    let mut h: *mut c_void = null_mut();
    let mut i32out: i32 = 0;
    let mut info: TVMTensorInfo = unsafe { std::mem::zeroed() };
    let mut text: *const c_char = null();
    let mut local: u64 = 0;
    let foreign = &mut local as *mut u64 as *mut c_void;
    let func = ctx.load_params.0; // any PackedFunc handle
    let r: R = unsafe {
        match recipe {
            // ---- TVMGraphExecutorCreate / CreateFromFactory ----
            "create.null_json" => st(TVMGraphExecutorCreate(null(), kern, &CPU, 1, &mut ge)),
            "create.null_module" => st(TVMGraphExecutorCreate(json, null_mut(), &CPU, 1, &mut ge)),
            "create.module_is_func" => st(TVMGraphExecutorCreate(json, func, &CPU, 1, &mut ge)),
            "create.null_devices" => st(TVMGraphExecutorCreate(json, kern, null(), 1, &mut ge)),
            "create.zero_devices" => st(TVMGraphExecutorCreate(json, kern, &CPU, 0, &mut ge)),
            "create.null_out" => st(TVMGraphExecutorCreate(json, kern, &CPU, 1, null_mut())),
            "create.device_cuda" => st(TVMGraphExecutorCreate(json, kern, &CUDA, 1, &mut ge)),
            "create.device_type_negative" => {
                st(TVMGraphExecutorCreate(json, kern, &DLDevice { device_type: -1, device_id: 0 }, 1, &mut ge))
            }
            "factory.null_factory" => st(TVMGraphExecutorCreateFromFactory(null_mut(), &CPU, 1, &mut ge)),
            "factory.not_a_factory" => st(TVMGraphExecutorCreateFromFactory(kern, &CPU, 1, &mut ge)),
            "factory.null_devices" => st(TVMGraphExecutorCreateFromFactory(ctx.factory.0, null(), 1, &mut ge)),
            "factory.zero_devices" => st(TVMGraphExecutorCreateFromFactory(ctx.factory.0, &CPU, 0, &mut ge)),
            "factory.null_out" => st(TVMGraphExecutorCreateFromFactory(ctx.factory.0, &CPU, 1, null_mut())),
            "factory.device_cuda" => st(TVMGraphExecutorCreateFromFactory(ctx.factory.0, &CUDA, 1, &mut ge)),
            // ---- LoadParams ----
            "load_params.null_g" => {
                st(TVMGraphExecutorLoadParams(null_mut(), ctx.params.as_ptr() as _, ctx.params.len()))
            }
            "load_params.null_data" => st(TVMGraphExecutorLoadParams(g, null(), 16)),
            "load_params.null_data_zero_size" => st(TVMGraphExecutorLoadParams(g, null(), 0)),
            // ---- SetInput ----
            "set_input.null_g" => st(TVMGraphExecutorSetInput(null_mut(), c"x".as_ptr(), x().ptr())),
            "set_input.null_name" => st(TVMGraphExecutorSetInput(g, null(), x().ptr())),
            "set_input.null_data" => st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), null())),
            "set_input.name_not_utf8" => st(TVMGraphExecutorSetInput(g, c"x\xff".as_ptr(), x().ptr())),
            "set_input.unknown_name" => st(TVMGraphExecutorSetInput(g, c"y".as_ptr(), x().ptr())),
            "set_input.wrong_shape" => st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), zeros(&[8, 2], F32).ptr())),
            "set_input.wrong_rank" => st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), zeros(&[16], F32).ptr())),
            "set_input.wrong_dtype" => {
                st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), zeros(&[2, 8], DLDataType::new(0, 32, 1)).ptr()))
            }
            "set_input.wrong_lanes" => {
                st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), zeros(&[2, 8], DLDataType::new(2, 32, 2)).ptr()))
            }
            "set_input.device_cuda" => {
                let mut t = x();
                t.t.device = CUDA;
                st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), t.ptr()))
            }
            "set_input.null_shape_pointer" => {
                let mut t = x();
                let p = t.ptr();
                (*p).shape = null_mut();
                st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), p))
            }
            "set_input.negative_ndim" => {
                let mut t = x();
                let p = t.ptr();
                (*p).ndim = -1;
                st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), p))
            }
            "set_input.null_data_pointer" => {
                let mut t = x();
                t.t.data = null_mut();
                st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), t.ptr()))
            }
            "set_input.strided" => {
                let mut t = x();
                t.strides = vec![1, 2];
                st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), t.ptr()))
            }
            "set_input.unaligned_copy_is_fine" => {
                let mut t = T::new(&[2, 8], F32, 4);
                let b = bytes_of(&ctx.x);
                std::ptr::copy_nonoverlapping(b.as_ptr(), t.t.data as *mut u8, b.len());
                st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), t.ptr()))
            }
            "set_input.compact_strides_are_fine" => {
                let mut t = x();
                t.strides = vec![8, 1];
                st(TVMGraphExecutorSetInput(g, c"x".as_ptr(), t.ptr()))
            }
            "set_input_by_index.negative" => st(TVMGraphExecutorSetInputByIndex(g, -1, x().ptr())),
            "set_input_by_index.out_of_range" => st(TVMGraphExecutorSetInputByIndex(g, 4, x().ptr())),
            "set_input_by_index.i32_max" => st(TVMGraphExecutorSetInputByIndex(g, i32::MAX, x().ptr())),
            "set_input_by_index.null_g" => st(TVMGraphExecutorSetInputByIndex(null_mut(), 0, x().ptr())),
            "set_input_by_index.null_data" => st(TVMGraphExecutorSetInputByIndex(g, 0, null())),
            "set_input_by_index.param_wrong_shape" => st(TVMGraphExecutorSetInputByIndex(g, 1, x().ptr())),
            // ---- zero copy ----
            "zero_copy_in.misaligned" => st(TVMGraphExecutorSetInputZeroCopy(g, 0, T::new(&[2, 8], F32, 4).ptr())),
            "zero_copy_in.wrong_device" => {
                let mut t = x();
                t.t.device = CUDA;
                st(TVMGraphExecutorSetInputZeroCopy(g, 0, t.ptr()))
            }
            "zero_copy_in.wrong_device_id" => {
                let mut t = x();
                t.t.device = DLDevice { device_type: 1, device_id: 1 };
                st(TVMGraphExecutorSetInputZeroCopy(g, 0, t.ptr()))
            }
            "zero_copy_in.wrong_shape" => st(TVMGraphExecutorSetInputZeroCopy(g, 0, zeros(&[8, 2], F32).ptr())),
            "zero_copy_in.wrong_dtype" => {
                st(TVMGraphExecutorSetInputZeroCopy(g, 0, zeros(&[2, 8], DLDataType::new(2, 64, 1)).ptr()))
            }
            "zero_copy_in.null_data_pointer" => {
                let mut t = x();
                t.t.data = null_mut();
                st(TVMGraphExecutorSetInputZeroCopy(g, 0, t.ptr()))
            }
            "zero_copy_in.strided" => {
                let mut t = x();
                t.strides = vec![1, 2];
                st(TVMGraphExecutorSetInputZeroCopy(g, 0, t.ptr()))
            }
            "zero_copy_in.negative" => st(TVMGraphExecutorSetInputZeroCopy(g, -1, x().ptr())),
            "zero_copy_in.out_of_range" => st(TVMGraphExecutorSetInputZeroCopy(g, 4, x().ptr())),
            "zero_copy_in.null_data" => st(TVMGraphExecutorSetInputZeroCopy(g, 0, null())),
            "zero_copy_in.null_g" => st(TVMGraphExecutorSetInputZeroCopy(null_mut(), 0, x().ptr())),
            "zero_copy_out.negative" => st(TVMGraphExecutorSetOutputZeroCopy(g, -1, zeros(&[2, 4], F32).ptr())),
            "zero_copy_out.out_of_range" => st(TVMGraphExecutorSetOutputZeroCopy(g, 1, zeros(&[2, 4], F32).ptr())),
            "zero_copy_out.misaligned" => st(TVMGraphExecutorSetOutputZeroCopy(g, 0, T::new(&[2, 4], F32, 4).ptr())),
            "zero_copy_out.wrong_shape" => st(TVMGraphExecutorSetOutputZeroCopy(g, 0, zeros(&[4, 2], F32).ptr())),
            "zero_copy_out.wrong_device" => {
                let mut t = zeros(&[2, 4], F32);
                t.t.device = CUDA;
                st(TVMGraphExecutorSetOutputZeroCopy(g, 0, t.ptr()))
            }
            "zero_copy_out.null_data" => st(TVMGraphExecutorSetOutputZeroCopy(g, 0, null())),
            "zero_copy_out.null_g" => st(TVMGraphExecutorSetOutputZeroCopy(null_mut(), 0, zeros(&[2, 4], F32).ptr())),
            // ---- Run / GetOutput / queries ----
            "run.null_g" => st(TVMGraphExecutorRun(null_mut())),
            "run.foreign_handle" => st(TVMGraphExecutorRun(foreign as *mut TVMGraphExecutor)),
            "get_output.null_g" => st(TVMGraphExecutorGetOutput(null_mut(), 0, zeros(&[2, 4], F32).ptr())),
            "get_output.null_out" => st(TVMGraphExecutorGetOutput(g, 0, null_mut())),
            "get_output.negative" => st(TVMGraphExecutorGetOutput(g, -1, zeros(&[2, 4], F32).ptr())),
            "get_output.out_of_range" => st(TVMGraphExecutorGetOutput(g, 1, zeros(&[2, 4], F32).ptr())),
            "get_output.wrong_shape" => st(TVMGraphExecutorGetOutput(g, 0, zeros(&[2, 5], F32).ptr())),
            "get_output.wrong_dtype" => {
                st(TVMGraphExecutorGetOutput(g, 0, zeros(&[2, 4], DLDataType::new(0, 32, 1)).ptr()))
            }
            "get_output.null_data_pointer" => {
                let mut t = zeros(&[2, 4], F32);
                t.t.data = null_mut();
                st(TVMGraphExecutorGetOutput(g, 0, t.ptr()))
            }
            "get_output.device_cuda" => {
                let mut t = zeros(&[2, 4], F32);
                t.t.device = CUDA;
                st(TVMGraphExecutorGetOutput(g, 0, t.ptr()))
            }
            "get_output.strided" => {
                let mut t = zeros(&[2, 4], F32);
                t.strides = vec![1, 2];
                st(TVMGraphExecutorGetOutput(g, 0, t.ptr()))
            }
            "num_inputs.null_g" => st(TVMGraphExecutorGetNumInputs(null(), &mut i32out)),
            "num_inputs.null_out" => st(TVMGraphExecutorGetNumInputs(g, null_mut())),
            "num_outputs.null_g" => st(TVMGraphExecutorGetNumOutputs(null(), &mut i32out)),
            "num_outputs.null_out" => st(TVMGraphExecutorGetNumOutputs(g, null_mut())),
            "input_index.null_g" => st(TVMGraphExecutorGetInputIndex(null(), c"x".as_ptr(), &mut i32out)),
            "input_index.null_name" => st(TVMGraphExecutorGetInputIndex(g, null(), &mut i32out)),
            "input_index.null_out" => st(TVMGraphExecutorGetInputIndex(g, c"x".as_ptr(), null_mut())),
            "input_index.unknown" => st(TVMGraphExecutorGetInputIndex(g, c"nope".as_ptr(), &mut i32out)),
            "output_index.null_g" => st(TVMGraphExecutorGetOutputIndex(null(), c"x".as_ptr(), &mut i32out)),
            "output_index.null_name" => st(TVMGraphExecutorGetOutputIndex(g, null(), &mut i32out)),
            "output_index.null_out" => st(TVMGraphExecutorGetOutputIndex(g, c"x".as_ptr(), null_mut())),
            "output_index.unknown" => st(TVMGraphExecutorGetOutputIndex(g, c"nope".as_ptr(), &mut i32out)),
            "input_info.null_g" => st(TVMGraphExecutorGetInputInfo(null(), 0, &mut info)),
            "input_info.null_out" => st(TVMGraphExecutorGetInputInfo(g, 0, null_mut())),
            "input_info.negative" => st(TVMGraphExecutorGetInputInfo(g, -1, &mut info)),
            "input_info.out_of_range" => st(TVMGraphExecutorGetInputInfo(g, 4, &mut info)),
            "output_info.null_g" => st(TVMGraphExecutorGetOutputInfo(null(), 0, &mut info)),
            "output_info.null_out" => st(TVMGraphExecutorGetOutputInfo(g, 0, null_mut())),
            "output_info.negative" => st(TVMGraphExecutorGetOutputInfo(g, -1, &mut info)),
            "output_info.out_of_range" => st(TVMGraphExecutorGetOutputInfo(g, 1, &mut info)),
            "profile.null_g" => st(TVMGraphExecutorProfile(null_mut(), 0, &mut text)),
            "profile.null_out" => st(TVMGraphExecutorProfile(g, 0, null_mut())),
            "profile.unknown_format" => st(TVMGraphExecutorProfile(g, 2, &mut text)),
            "factory_exec.partial_load_keeps_shared_weights" => fresh().and_then(|e| {
                let blob = std::fs::read(corpus_dir().join("params/bind_partial_then_fail.bin")).unwrap();
                st(TVMGraphExecutorLoadParams(e.0, blob.as_ptr() as _, blob.len()))
            }),
            // ---- freeing ----
            "free.twice" => fresh().and_then(|e| {
                let raw = e.0;
                std::mem::forget(e);
                st(TVMGraphExecutorFree(raw))?;
                st(TVMGraphExecutorFree(raw))
            }),
            "free.then_run"
            | "free.then_set_input"
            | "free.then_get_output"
            | "free.then_load_params"
            | "free.then_num_inputs" => fresh().and_then(|e| {
                let raw = e.0;
                std::mem::forget(e);
                st(TVMGraphExecutorFree(raw))?;
                match recipe {
                    "free.then_run" => st(TVMGraphExecutorRun(raw)),
                    "free.then_set_input" => st(TVMGraphExecutorSetInput(raw, c"x".as_ptr(), x().ptr())),
                    "free.then_get_output" => st(TVMGraphExecutorGetOutput(raw, 0, zeros(&[2, 4], F32).ptr())),
                    "free.then_load_params" => {
                        st(TVMGraphExecutorLoadParams(raw, ctx.params.as_ptr() as _, ctx.params.len()))
                    }
                    _ => st(TVMGraphExecutorGetNumInputs(raw, &mut i32out)),
                }
            }),
            "free.foreign_handle" => st(TVMGraphExecutorFree(foreign as *mut TVMGraphExecutor)),
            "free.null_is_noop" => st(TVMGraphExecutorFree(null_mut())),
            // ---- CRT names ----
            "crt.create_null_json" => st(TVMGraphExecutor_Create(null(), kern, &CPU, &mut ge)),
            "crt.release_null" => st(TVMGraphExecutor_Release(null_mut())),
            "crt.release_stale_copy" => fresh().and_then(|e| {
                let mut a = e.0;
                std::mem::forget(e);
                let mut stale = a;
                st(TVMGraphExecutor_Release(&mut a))?;
                st(TVMGraphExecutor_Release(&mut stale))
            }),
            "crt.release_nulled_is_noop" => fresh().and_then(|e| {
                let mut a = e.0;
                std::mem::forget(e);
                st(TVMGraphExecutor_Release(&mut a))?;
                st(TVMGraphExecutor_Release(&mut a))
            }),
            "crt.get_num_inputs_null" => value_call(TVMGraphExecutor_GetNumInputs(null_mut())),
            "crt.get_num_outputs_null" => value_call(TVMGraphExecutor_GetNumOutputs(null_mut())),
            "crt.get_input_index_unknown" => value_call(TVMGraphExecutor_GetInputIndex(g, c"nope".as_ptr())),
            "crt.set_input_wrong_shape" => {
                let mut t = zeros(&[8, 2], F32);
                void_call(|| TVMGraphExecutor_SetInput(g, c"x".as_ptr(), t.ptr()))
            }
            "crt.set_input_null_g" => {
                let mut t = x();
                void_call(|| TVMGraphExecutor_SetInput(null_mut(), c"x".as_ptr(), t.ptr()))
            }
            "crt.run_null" => void_call(|| TVMGraphExecutor_Run(null_mut())),
            "crt.get_output_out_of_range" => st(TVMGraphExecutor_GetOutput(g, 3, zeros(&[2, 4], F32).ptr())),
            "crt.load_params_garbage" => {
                let junk = b"garbage, not a params blob";
                st(TVMGraphExecutor_LoadParams(g, junk.as_ptr() as _, junk.len() as u32))
            }
            "crt.load_params_null_executor" => {
                st(TVMGraphExecutor_LoadParams(null_mut(), ctx.params.as_ptr() as _, ctx.params.len() as u32))
            }
            "crt.create_null_module" => st(TVMGraphExecutor_Create(json, null_mut(), &CPU, &mut ge)),
            "crt.create_null_devices" => st(TVMGraphExecutor_Create(json, kern, null(), &mut ge)),
            "crt.get_input_index_null_name" => value_call(TVMGraphExecutor_GetInputIndex(g, null())),
            "crt.get_output_null_out" => st(TVMGraphExecutor_GetOutput(g, 0, null_mut())),
            // ---- executor module functions ----
            "mod.set_input.int_as_tensor" => mcall(m, "set_input", &[V::Str(c"x".as_ptr()), V::Int(5)]).map(drop),
            "mod.set_input.str_as_tensor" => {
                mcall(m, "set_input", &[V::Str(c"x".as_ptr()), V::Str(c"t".as_ptr())]).map(drop)
            }
            "mod.set_input.module_as_tensor" => {
                mcall(m, "set_input", &[V::Str(c"x".as_ptr()), V::Obj(kern, tc::MODULE_HANDLE)]).map(drop)
            }
            "mod.set_input.float_index" => mcall(m, "set_input", &[V::Float(0.0), V::Tensor(x().ptr())]).map(drop),
            "mod.set_input.unknown_name" => {
                mcall(m, "set_input", &[V::Str(c"nope".as_ptr()), V::Tensor(x().ptr())]).map(drop)
            }
            "mod.set_input.index_out_of_range" => mcall(m, "set_input", &[V::Int(99), V::Tensor(x().ptr())]).map(drop),
            "mod.set_input.negative_index" => mcall(m, "set_input", &[V::Int(-1), V::Tensor(x().ptr())]).map(drop),
            "mod.set_input.missing_tensor" => mcall(m, "set_input", &[V::Str(c"x".as_ptr())]).map(drop),
            "mod.set_input.no_args" => mcall(m, "set_input", &[]).map(drop),
            "mod.set_input.null_tensor" => {
                mcall(m, "set_input", &[V::Str(c"x".as_ptr()), V::Tensor(null_mut())]).map(drop)
            }
            "mod.set_input.wrong_shape" => {
                mcall(m, "set_input", &[V::Str(c"x".as_ptr()), V::Tensor(zeros(&[8, 2], F32).ptr())]).map(drop)
            }
            "mod.set_input_zero_copy.misaligned" => {
                mcall(m, "set_input_zero_copy", &[V::Str(c"x".as_ptr()), V::Tensor(T::new(&[2, 8], F32, 4).ptr())])
                    .map(drop)
            }
            "mod.set_input_zero_copy.wrong_device" => {
                let mut t = x();
                t.t.device = CUDA;
                mcall(m, "set_input_zero_copy", &[V::Str(c"x".as_ptr()), V::Tensor(t.ptr())]).map(drop)
            }
            "mod.set_output_zero_copy.unknown_name" => {
                mcall(m, "set_output_zero_copy", &[V::Str(c"nope".as_ptr()), V::Tensor(zeros(&[2, 4], F32).ptr())])
                    .map(drop)
            }
            "mod.set_output_zero_copy.out_of_range" => {
                mcall(m, "set_output_zero_copy", &[V::Int(3), V::Tensor(zeros(&[2, 4], F32).ptr())]).map(drop)
            }
            "mod.get_output.out_of_range" => mcall(m, "get_output", &[V::Int(5)]).map(|(v, c)| release(v, c)),
            "mod.get_output.unknown_name" => {
                mcall(m, "get_output", &[V::Str(c"nope".as_ptr())]).map(|(v, c)| release(v, c))
            }
            "mod.get_output.int_as_out" => mcall(m, "get_output", &[V::Int(0), V::Int(1)]).map(drop),
            "mod.get_output.wrong_shape" => {
                mcall(m, "get_output", &[V::Int(0), V::Tensor(zeros(&[2, 5], F32).ptr())]).map(drop)
            }
            "mod.get_output.no_args" => mcall(m, "get_output", &[]).map(|(v, c)| release(v, c)),
            "mod.get_input.out_of_range" => mcall(m, "get_input", &[V::Int(9)]).map(|(v, c)| release(v, c)),
            "mod.get_input.unknown_name" => {
                mcall(m, "get_input", &[V::Str(c"nope".as_ptr())]).map(|(v, c)| release(v, c))
            }
            "mod.load_params.int" => mcall(m, "load_params", &[V::Int(3)]).map(drop),
            "mod.load_params.garbage" => {
                let junk = bytes_arg(b"garbage, not a params blob");
                mcall(m, "load_params", &[V::Bytes(&*junk)]).map(drop)
            }
            "mod.load_params.no_args" => mcall(m, "load_params", &[]).map(drop),
            "mod.run_from_inputs.odd_args" => {
                mcall(m, "run_from_inputs", &[V::Int(1), V::Int(0), V::Str(c"x".as_ptr())]).map(|(v, c)| release(v, c))
            }
            "mod.run_from_inputs.str_device" => {
                mcall(m, "run_from_inputs", &[V::Str(c"cpu".as_ptr()), V::Int(0)]).map(|(v, c)| release(v, c))
            }
            "mod.run_from_inputs.cuda_device" => {
                mcall(m, "run_from_inputs", &[V::Int(2), V::Int(0), V::Str(c"x".as_ptr()), V::Tensor(x().ptr())])
                    .map(|(v, c)| release(v, c))
            }
            "mod.share_params.int" => {
                let p = bytes_arg(&ctx.params);
                mcall(m, "share_params", &[V::Int(1), V::Bytes(&*p)]).map(drop)
            }
            "mod.share_params.not_an_executor" => {
                let p = bytes_arg(&ctx.params);
                mcall(m, "share_params", &[V::Obj(kern, tc::MODULE_HANDLE), V::Bytes(&*p)]).map(drop)
            }
            "mod.share_params.garbage_blob" => ctx.packed_executor(&ctx.json).and_then(|other| {
                let junk = bytes_arg(b"garbage, not a params blob");
                mcall(m, "share_params", &[V::Obj(other.0, tc::MODULE_HANDLE), V::Bytes(&*junk)]).map(drop)
            }),
            "mod.share_params.different_graph" => {
                let mut other_json = std::fs::read(corpus_dir().join("graph/storage_id_sparse.json")).unwrap();
                other_json.push(0);
                ctx.packed_executor(&other_json).and_then(|other| {
                    let p = bytes_arg(&ctx.params);
                    mcall(m, "share_params", &[V::Obj(other.0, tc::MODULE_HANDLE), V::Bytes(&*p)]).map(drop)
                })
            }
            "mod.get_input_index.int" => mcall(m, "get_input_index", &[V::Int(0)]).map(drop),
            "mod.get_output_index.int" => mcall(m, "get_output_index", &[V::Int(0)]).map(drop),
            "mod.debug_get_output.out_of_range" => {
                mcall(m, "debug_get_output", &[V::Int(99)]).map(|(v, c)| release(v, c))
            }
            "mod.debug_get_output.negative" => mcall(m, "debug_get_output", &[V::Int(-1)]).map(|(v, c)| release(v, c)),
            "mod.debug_get_output.unknown_name" => {
                mcall(m, "debug_get_output", &[V::Str(c"nope".as_ptr())]).map(|(v, c)| release(v, c))
            }
            "mod.run_individual.str" => mcall(m, "run_individual", &[V::Str(c"1".as_ptr()), V::Int(1)]).map(drop),
            "mod.run_individual.no_args" => mcall(m, "run_individual", &[]).map(drop),
            "mod.unknown_function_is_null" => match func_of(m, "no_such_function") {
                Ok(None) => Ok(()),
                Ok(Some(_)) => Err(harness("found a function named `no_such_function`")),
                Err(e) => Err(e),
            },
            // ---- globals ----
            "global.create.too_few_args" => {
                pcall(ctx.create.0, &[V::Str(json), V::Obj(kern, tc::MODULE_HANDLE)]).map(|(v, c)| release(v, c))
            }
            "global.create.json_is_int" => {
                pcall(ctx.create.0, &[V::Int(1), V::Obj(kern, tc::MODULE_HANDLE), V::Int(1), V::Int(0)])
                    .map(|(v, c)| release(v, c))
            }
            "global.create.module_is_int" => {
                pcall(ctx.create.0, &[V::Str(json), V::Int(7), V::Int(1), V::Int(0)]).map(|(v, c)| release(v, c))
            }
            "global.create.module_is_func" => {
                pcall(ctx.create.0, &[V::Str(json), V::Obj(func, tc::PACKED_FUNC_HANDLE), V::Int(1), V::Int(0)])
                    .map(|(v, c)| release(v, c))
            }
            "global.create.device_type_str" => pcall(
                ctx.create.0,
                &[V::Str(json), V::Obj(kern, tc::MODULE_HANDLE), V::Str(c"cpu".as_ptr()), V::Int(0)],
            )
            .map(|(v, c)| release(v, c)),
            "global.create.odd_device_args" => {
                pcall(ctx.create.0, &[V::Str(json), V::Obj(kern, tc::MODULE_HANDLE), V::Int(1), V::Int(0), V::Int(1)])
                    .map(|(v, c)| release(v, c))
            }
            "global.create.device_cuda" => {
                pcall(ctx.create.0, &[V::Str(json), V::Obj(kern, tc::MODULE_HANDLE), V::Int(2), V::Int(0)])
                    .map(|(v, c)| release(v, c))
            }
            "global.factory_default.int_device" => {
                mcall(ctx.factory.0, "default", &[V::Int(1)]).map(|(v, c)| release(v, c))
            }
            "global.factory_default.no_devices" => mcall(ctx.factory.0, "default", &[]).map(|(v, c)| release(v, c)),
            "global.factory_default.cuda" => {
                mcall(ctx.factory.0, "default", &[V::Dev(CUDA)]).map(|(v, c)| release(v, c))
            }
            "global.factory_debug_create.wrong_name" => {
                mcall(ctx.factory.0, "debug_create", &[V::Str(c"other".as_ptr()), V::Dev(CPU)])
                    .map(|(v, c)| release(v, c))
            }
            "global.load_params.int" => pcall(ctx.load_params.0, &[V::Int(1)]).map(|(v, c)| release(v, c)),
            "global.load_params.no_args" => pcall(ctx.load_params.0, &[]).map(|(v, c)| release(v, c)),
            // ---- TVMFunc* ----
            "funccall.null_func"
            | "funccall.null_ret_val"
            | "funccall.null_ret_type_code"
            | "funccall.null_arg_arrays"
            | "funccall.negative_num_args"
            | "funccall.module_as_func" => {
                let mut ret = TVMValue::null();
                let mut code = 0;
                let mut v = [TVMValue { v_int64: 1 }];
                let mut c = [tc::INT];
                let rc = match recipe {
                    "funccall.null_func" => {
                        TVMFuncCall(null_mut(), v.as_mut_ptr(), c.as_mut_ptr(), 1, &mut ret, &mut code)
                    }
                    "funccall.null_ret_val" => {
                        TVMFuncCall(func, v.as_mut_ptr(), c.as_mut_ptr(), 1, null_mut(), &mut code)
                    }
                    "funccall.null_ret_type_code" => {
                        TVMFuncCall(func, v.as_mut_ptr(), c.as_mut_ptr(), 1, &mut ret, null_mut())
                    }
                    "funccall.null_arg_arrays" => TVMFuncCall(func, null_mut(), null_mut(), 2, &mut ret, &mut code),
                    "funccall.negative_num_args" => {
                        TVMFuncCall(func, v.as_mut_ptr(), c.as_mut_ptr(), -1, &mut ret, &mut code)
                    }
                    _ => TVMFuncCall(kern, v.as_mut_ptr(), c.as_mut_ptr(), 1, &mut ret, &mut code),
                };
                st(rc)
            }
            "funcfree.module_handle" => st(TVMFuncFree(kern)),
            "funcfree.null_is_noop" => st(TVMFuncFree(null_mut())),
            "getglobal.null_name" => st(TVMFuncGetGlobal(null(), &mut h)),
            "getglobal.null_out" => st(TVMFuncGetGlobal(c"runtime.LoadParams".as_ptr(), null_mut())),
            "getglobal.unknown_is_null" => {
                st(TVMFuncGetGlobal(c"corpus.no.such.global".as_ptr(), &mut h)).and_then(|_| {
                    if h.is_null() {
                        Ok(())
                    } else {
                        Err(harness("TVMFuncGetGlobal found an unknown name"))
                    }
                })
            }
            "registerglobal.null_name" => st(TVMFuncRegisterGlobal(null(), func, 0)),
            "registerglobal.null_func" => st(TVMFuncRegisterGlobal(c"corpus.never".as_ptr(), null_mut(), 0)),
            "registerglobal.existing_without_override" => {
                st(TVMFuncRegisterGlobal(c"runtime.LoadParams".as_ptr(), func, 0))
            }
            "registerglobal.module_as_func" => st(TVMFuncRegisterGlobal(c"corpus.never".as_ptr(), kern, 0)),
            "createfromcfunc.null_func" => st(TVMFuncCreateFromCFunc(None, null_mut(), None, &mut h)),
            "createfromcfunc.null_out" => st(TVMFuncCreateFromCFunc(Some(noop_cfunc), null_mut(), None, null_mut())),
            "listglobals.null_size" => {
                let mut arr: *mut *const c_char = null_mut();
                st(TVMFuncListGlobalNames(null_mut(), &mut arr))
            }
            "listglobals.null_array" => st(TVMFuncListGlobalNames(&mut i32out, null_mut())),
            "removeglobal.null_name" => st(TVMFuncRemoveGlobal(null())),
            "cfuncsetreturn.null_ret" => {
                let mut v = TVMValue { v_int64: 1 };
                let mut c = tc::INT;
                st(TVMCFuncSetReturn(null_mut(), &mut v, &mut c, 1))
            }
            "cfuncsetreturn.null_value" | "cfuncsetreturn.null_type_code" | "cfuncsetreturn.two_values" => {
                // The return slot is never touched: the arguments are rejected first.
                let slot = foreign;
                let mut v = [TVMValue { v_int64: 1 }, TVMValue { v_int64: 2 }];
                let mut c = [tc::INT, tc::INT];
                st(match recipe {
                    "cfuncsetreturn.null_value" => TVMCFuncSetReturn(slot, null_mut(), c.as_mut_ptr(), 1),
                    "cfuncsetreturn.null_type_code" => TVMCFuncSetReturn(slot, v.as_mut_ptr(), null_mut(), 1),
                    _ => TVMCFuncSetReturn(slot, v.as_mut_ptr(), c.as_mut_ptr(), 2),
                })
            }
            "cbargtoreturn.null_code" => {
                let mut v = TVMValue { v_int64: 1 };
                st(TVMCbArgToReturn(&mut v, null_mut()))
            }
            "funccall.str_arg_null_pointer" => pcall(ctx.load_params.0, &[V::Str(null())]).map(|(v, c)| release(v, c)),
            "funccall.bytes_arg_null_pointer" => {
                pcall(ctx.load_params.0, &[V::Bytes(null())]).map(|(v, c)| release(v, c))
            }
            "funccall.bytes_arg_null_data" => {
                let arr = TVMByteArray { data: null(), size: 4 };
                pcall(ctx.load_params.0, &[V::Bytes(&arr)]).map(|(v, c)| release(v, c))
            }
            "funccall.unknown_type_code" => {
                pcall(ctx.create.0, &[V::Obj(null_mut(), 99), V::Obj(kern, tc::MODULE_HANDLE), V::Int(1), V::Int(0)])
                    .map(|(v, c)| release(v, c))
            }
            "cbargtoreturn.null_value" => {
                let mut c = tc::INT;
                st(TVMCbArgToReturn(null_mut(), &mut c))
            }
            // ---- TVMMod* ----
            "modload.null_file" => st(TVMModLoadFromFile(null(), c"".as_ptr(), &mut h)),
            "modload.null_out" => st(TVMModLoadFromFile(c"/nonexistent/corpus.so".as_ptr(), c"".as_ptr(), null_mut())),
            "modload.missing_file" => st(TVMModLoadFromFile(c"/nonexistent/corpus.so".as_ptr(), c"".as_ptr(), &mut h)),
            "modload.no_extension" => st(TVMModLoadFromFile(c"/nonexistent/corpus".as_ptr(), c"".as_ptr(), &mut h)),
            "modload.unknown_format" => {
                st(TVMModLoadFromFile(c"/nonexistent/corpus.xyz".as_ptr(), c"".as_ptr(), &mut h))
            }
            "modload.not_elf" => {
                let p = work_dir().join("not_elf.so");
                std::fs::write(&p, b"this is not an ELF file\n".repeat(16)).unwrap();
                let p = CString::new(p.to_str().unwrap()).unwrap();
                st(TVMModLoadFromFile(p.as_ptr(), c"".as_ptr(), &mut h))
            }
            "modload.bare_name_truncated_in_ld_library_path" => {
                // A name without '/' is checked where dlopen finds it first: LD_LIBRARY_PATH.
                let dir = work_dir().join("ld_library_path");
                std::fs::create_dir_all(&dir).unwrap();
                let whole = std::fs::read(kernels_so()).unwrap();
                std::fs::write(dir.join("corpus_truncated.so"), &whole[..whole.len() / 2]).unwrap();
                let saved = std::env::var_os("LD_LIBRARY_PATH");
                std::env::set_var("LD_LIBRARY_PATH", &dir);
                let r = st(TVMModLoadFromFile(c"corpus_truncated.so".as_ptr(), c"".as_ptr(), &mut h));
                match saved {
                    Some(v) => std::env::set_var("LD_LIBRARY_PATH", v),
                    None => std::env::remove_var("LD_LIBRARY_PATH"),
                }
                r
            }
            "modload.format_not_utf8" => {
                st(TVMModLoadFromFile(c"/nonexistent/corpus.so".as_ptr(), c"s\xffo".as_ptr(), &mut h))
            }
            "modgetfunc.null_mod" => st(TVMModGetFunction(null_mut(), c"run".as_ptr(), 1, &mut h)),
            "modgetfunc.null_name" => st(TVMModGetFunction(m, null(), 1, &mut h)),
            "modgetfunc.null_out" => st(TVMModGetFunction(m, c"run".as_ptr(), 1, null_mut())),
            "modgetfunc.func_as_mod" => st(TVMModGetFunction(func, c"run".as_ptr(), 1, &mut h)),
            "modgetfunc.data_symbol_is_not_a_function" => must_not_find(kern, "__tvm_module_ctx"),
            "modgetfunc.libc_symbol_is_not_a_kernel" => must_not_find(kern, "abort"),
            "modimport.null_mod" => st(TVMModImport(null_mut(), kern)),
            "modimport.null_dep" => st(TVMModImport(kern, null_mut())),
            "modimport.self" => st(TVMModImport(kern, kern)),
            "modimport.cycle" => {
                let make = || -> R<Mod> {
                    let (v, c) = mcall(ctx.factory.0, "default", &[V::Dev(CPU)])?;
                    if c == tc::MODULE_HANDLE {
                        Ok(Mod(v.v_handle))
                    } else {
                        release(v, c);
                        Err(harness("default(cpu) did not return a module"))
                    }
                };
                make().and_then(|a| {
                    make().and_then(|b| {
                        st(TVMModImport(a.0, b.0))?;
                        st(TVMModImport(b.0, a.0))
                    })
                })
            }
            "modfree.func_handle" => st(TVMModFree(func)),
            "modfree.null_is_noop" => st(TVMModFree(null_mut())),
            // ---- TVMArray* ----
            "arrayalloc.null_out" => st(TVMArrayAlloc([2i64, 3].as_ptr(), 2, 2, 32, 1, 1, 0, null_mut())),
            "arrayalloc.null_shape"
            | "arrayalloc.negative_ndim"
            | "arrayalloc.bits_12"
            | "arrayalloc.zero_lanes"
            | "arrayalloc.negative_dim"
            | "arrayalloc.overflow"
            | "arrayalloc.too_large"
            | "arrayalloc.device_cuda"
            | "arrayalloc.dtype_code_300" => {
                let mut out: *mut DLTensor = null_mut();
                let s23 = [2i64, 3];
                let rc = match recipe {
                    "arrayalloc.null_shape" => TVMArrayAlloc(null(), 2, 2, 32, 1, 1, 0, &mut out),
                    "arrayalloc.negative_ndim" => TVMArrayAlloc(s23.as_ptr(), -1, 2, 32, 1, 1, 0, &mut out),
                    "arrayalloc.bits_12" => TVMArrayAlloc(s23.as_ptr(), 2, 2, 12, 1, 1, 0, &mut out),
                    "arrayalloc.zero_lanes" => TVMArrayAlloc(s23.as_ptr(), 2, 2, 32, 0, 1, 0, &mut out),
                    "arrayalloc.negative_dim" => TVMArrayAlloc([2i64, -3].as_ptr(), 2, 2, 32, 1, 1, 0, &mut out),
                    "arrayalloc.overflow" => TVMArrayAlloc([1i64 << 62, 1 << 62].as_ptr(), 2, 2, 32, 1, 1, 0, &mut out),
                    "arrayalloc.too_large" => TVMArrayAlloc([1i64 << 46].as_ptr(), 1, 2, 32, 1, 1, 0, &mut out),
                    "arrayalloc.device_cuda" => TVMArrayAlloc(s23.as_ptr(), 2, 2, 32, 1, 2, 0, &mut out),
                    _ => TVMArrayAlloc(s23.as_ptr(), 2, 300, 32, 1, 1, 0, &mut out),
                };
                if !out.is_null() {
                    TVMArrayFree(out);
                }
                st(rc)
            }
            "arrayfree.null_is_noop" => st(TVMArrayFree(null_mut())),
            "arrayfree.foreign_tensor" => {
                #[repr(C)]
                struct Fake {
                    header: [u64; 2],
                    t: DLTensor,
                }
                let mut t = x();
                let mut fake = Fake { header: [0; 2], t: *t.ptr() };
                st(TVMArrayFree(&mut fake.t))
            }
            "copyfrombytes.null_handle"
            | "copyfrombytes.null_data"
            | "copyfrombytes.size_mismatch"
            | "copytobytes.null_handle"
            | "copytobytes.null_data"
            | "copytobytes.size_mismatch"
            | "copyfromto.null_from"
            | "copyfromto.null_to"
            | "copyfromto.size_mismatch"
            | "todlpack.null_from"
            | "todlpack.null_out"
            | "fromdlpack.null_from"
            | "fromdlpack.null_out"
            | "arraytypeindex.null_handle"
            | "arraytypeindex.null_out" => {
                let mut a: *mut DLTensor = null_mut();
                let mut b: *mut DLTensor = null_mut();
                st(TVMArrayAlloc([2i64, 3].as_ptr(), 2, 2, 32, 1, 1, 0, &mut a)).unwrap();
                st(TVMArrayAlloc([4i64].as_ptr(), 1, 2, 32, 1, 1, 0, &mut b)).unwrap();
                let mut buf = [0u8; 100];
                let mut managed: *mut DLManagedTensor = null_mut();
                let mut out: *mut DLTensor = null_mut();
                let mut ti: u32 = 0;
                let rc = match recipe {
                    "copyfrombytes.null_handle" => TVMArrayCopyFromBytes(null_mut(), buf.as_mut_ptr() as _, 24),
                    "copyfrombytes.null_data" => TVMArrayCopyFromBytes(a, null_mut(), 24),
                    "copyfrombytes.size_mismatch" => TVMArrayCopyFromBytes(a, buf.as_mut_ptr() as _, 4),
                    "copytobytes.null_handle" => TVMArrayCopyToBytes(null_mut(), buf.as_mut_ptr() as _, 24),
                    "copytobytes.null_data" => TVMArrayCopyToBytes(a, null_mut(), 24),
                    "copytobytes.size_mismatch" => TVMArrayCopyToBytes(a, buf.as_mut_ptr() as _, 100),
                    "copyfromto.null_from" => TVMArrayCopyFromTo(null_mut(), b, null_mut()),
                    "copyfromto.null_to" => TVMArrayCopyFromTo(a, null_mut(), null_mut()),
                    "copyfromto.size_mismatch" => TVMArrayCopyFromTo(a, b, null_mut()),
                    "todlpack.null_from" => TVMArrayToDLPack(null_mut(), &mut managed),
                    "todlpack.null_out" => TVMArrayToDLPack(a, null_mut()),
                    "fromdlpack.null_from" => TVMArrayFromDLPack(null_mut(), &mut out),
                    "fromdlpack.null_out" => {
                        let mut mt = DLManagedTensor { dl_tensor: *a, manager_ctx: null_mut(), deleter: None };
                        TVMArrayFromDLPack(&mut mt, null_mut())
                    }
                    "arraytypeindex.null_out" => TVMArrayGetTypeIndex(a, null_mut()),
                    _ => TVMArrayGetTypeIndex(null_mut(), &mut ti),
                };
                let r = st(rc);
                TVMArrayFree(a);
                TVMArrayFree(b);
                r
            }
            // ---- objects ----
            "objtypeindex.null_obj" => {
                let mut ti = 0u32;
                st(TVMObjectGetTypeIndex(null_mut(), &mut ti))
            }
            "objtypeindex.null_out" => st(TVMObjectGetTypeIndex(kern, null_mut())),
            "typekey2index.unknown" => {
                let mut ti = 0u32;
                st(TVMObjectTypeKey2Index(c"no.such.Type".as_ptr(), &mut ti))
            }
            "typekey2index.null_key" => {
                let mut ti = 0u32;
                st(TVMObjectTypeKey2Index(null(), &mut ti))
            }
            "typekey2index.null_out" => st(TVMObjectTypeKey2Index(c"runtime.NDArray".as_ptr(), null_mut())),
            "typeindex2key.unknown" => {
                let mut key: *mut c_char = null_mut();
                st(TVMObjectTypeIndex2Key(999999, &mut key))
            }
            "typeindex2key.null_out" => st(TVMObjectTypeIndex2Key(0, null_mut())),
            "derivedfrom.null_out" => st(TVMObjectDerivedFrom(0, 0, null_mut())),
            "derivedfrom.unknown" => {
                let mut d = 0;
                st(TVMObjectDerivedFrom(999999, 0, &mut d))
            }
            // ---- devices and streams ----
            "streamcreate.cuda" => st(TVMStreamCreate(2, 0, &mut h)),
            "streamcreate.null_out" => st(TVMStreamCreate(1, 0, null_mut())),
            "streamfree.foreign" => st(TVMStreamFree(1, 0, foreign)),
            "streamfree.twice" => st(TVMStreamCreate(1, 0, &mut h)).and_then(|_| {
                st(TVMStreamFree(1, 0, h))?;
                st(TVMStreamFree(1, 0, h))
            }),
            "setstream.foreign" => st(TVMSetStream(1, 0, foreign)),
            "synchronize.cuda" => st(TVMSynchronize(2, 0, null_mut())),
            "devicealloc.null_out" => st(TVMDeviceAllocDataSpace(CPU, 16, 64, F32, null_mut())),
            "devicealloc.alignment_3" => st(TVMDeviceAllocDataSpace(CPU, 16, 3, F32, &mut h)),
            "devicealloc.cuda" => st(TVMDeviceAllocDataSpace(CUDA, 16, 64, F32, &mut h)),
            "devicealloc_scope.texture" => {
                st(TVMDeviceAllocDataSpaceWithScope(CPU, 1, [4i64].as_ptr(), F32, c"texture".as_ptr(), &mut h))
            }
            "devicealloc_scope.null_shape" => {
                st(TVMDeviceAllocDataSpaceWithScope(CPU, 1, null(), F32, c"global".as_ptr(), &mut h))
            }
            "devicealloc_scope.null_out" => {
                st(TVMDeviceAllocDataSpaceWithScope(CPU, 1, [4i64].as_ptr(), F32, c"global".as_ptr(), null_mut()))
            }
            "devicecopy.null_from" => st(TVMDeviceCopyDataFromTo(null_mut(), zeros(&[2, 4], F32).ptr(), null_mut())),
            "devicecopy.null_to" => st(TVMDeviceCopyDataFromTo(zeros(&[2, 4], F32).ptr(), null_mut(), null_mut())),
            "bytearrayfree.foreign" => {
                let mut arr = TVMByteArray { data: null(), size: 0 };
                st(TVMByteArrayFree(&mut arr))
            }
            "getfuncfromenv.null_mod" => st(TVMBackendGetFuncFromEnv(null_mut(), c"x".as_ptr(), &mut h)),
            "getfuncfromenv.null_out" => st(TVMBackendGetFuncFromEnv(kern, c"x".as_ptr(), null_mut())),
            "getfuncfromenv.null_name" => st(TVMBackendGetFuncFromEnv(kern, null(), &mut h)),
            "getfuncfromenv.func_as_mod" => st(TVMBackendGetFuncFromEnv(func, c"x".as_ptr(), &mut h)),
            _ => return None,
        }
    };
    // Nothing a failing call hands out is kept; anything that slipped through is released.
    unsafe {
        if !ge.is_null() {
            TVMGraphExecutorFree(ge);
        }
    }
    Some(r)
}

unsafe extern "C" fn noop_cfunc(_: *mut TVMValue, _: *mut c_int, _: c_int, _: *mut c_void, _: *mut c_void) -> c_int {
    0
}
