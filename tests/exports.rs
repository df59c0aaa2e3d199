//! The shared library exports exactly TVM's C ABI: every one of TVM 0.18's `TVM*` exports, no
//! Rust-mangled symbol, and of C++ symbols exactly tvm-ffi's (`cxx/exports.map`); it names itself
//! by its SONAME.

mod common;
use common::library_dir;
use std::process::Command;

/// The 56 `TVM*` functions exported by TVM 0.18's libtvm_runtime.so.
const TVM_EXPORTS: &[&str] = &[
    "TVMAPISetLastError",
    "TVMAPISetLastPythonError",
    "TVMArrayAlloc",
    "TVMArrayCopyFromBytes",
    "TVMArrayCopyFromTo",
    "TVMArrayCopyToBytes",
    "TVMArrayFree",
    "TVMArrayFromDLPack",
    "TVMArrayGetTypeIndex",
    "TVMArrayToDLPack",
    "TVMBackendAllocWorkspace",
    "TVMBackendAnyListMoveFromPackedReturn",
    "TVMBackendAnyListResetItem",
    "TVMBackendAnyListSetPackedArg",
    "TVMBackendFreeWorkspace",
    "TVMBackendGetFuncFromEnv",
    "TVMBackendParallelBarrier",
    "TVMBackendParallelLaunch",
    "TVMBackendRegisterEnvCAPI",
    "TVMBackendRegisterSystemLibSymbol",
    "TVMBackendRunOnce",
    "TVMByteArrayFree",
    "TVMCFuncSetReturn",
    "TVMCbArgToReturn",
    "TVMDLManagedTensorCallDeleter",
    "TVMDeviceAllocDataSpace",
    "TVMDeviceAllocDataSpaceWithScope",
    "TVMDeviceCopyDataFromTo",
    "TVMDeviceFreeDataSpace",
    "TVMDropLastPythonError",
    "TVMFuncCall",
    "TVMFuncCreateFromCFunc",
    "TVMFuncFree",
    "TVMFuncGetGlobal",
    "TVMFuncListGlobalNames",
    "TVMFuncRegisterGlobal",
    "TVMFuncRemoveGlobal",
    "TVMGetLastBacktrace",
    "TVMGetLastError",
    "TVMGetLastPythonError",
    "TVMModFree",
    "TVMModGetFunction",
    "TVMModImport",
    "TVMModLoadFromFile",
    "TVMObjectDerivedFrom",
    "TVMObjectFree",
    "TVMObjectGetTypeIndex",
    "TVMObjectRetain",
    "TVMObjectTypeIndex2Key",
    "TVMObjectTypeKey2Index",
    "TVMSetStream",
    "TVMStreamCreate",
    "TVMStreamFree",
    "TVMStreamStreamSynchronize",
    "TVMSynchronize",
    "TVMThrowLastError",
];

fn dynamic_symbols() -> Vec<String> {
    symbols_of("libtvm_runtime.so")
}

/// The defined dynamic symbols of a library of this build.
fn symbols_of(file: &str) -> Vec<String> {
    let so = library_dir().join(file);
    assert!(so.exists(), "{} was not built", so.display());
    let out =
        Command::new("nm").args(["-D", "--defined-only"]).arg(&so).output().expect("`nm` (binutils) must be installed");
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect()
}

#[test]
fn exports_every_tvm_symbol() {
    assert_eq!(TVM_EXPORTS.len(), 56);
    let syms = dynamic_symbols();
    let missing: Vec<_> = TVM_EXPORTS.iter().filter(|n| !syms.iter().any(|s| s == *n)).collect();
    assert!(missing.is_empty(), "missing exports: {missing:?}");
}

/// The C++ symbols of tvm-ffi's library (mangled), as `cxx/exports.map` lists them.
fn cxx_exports() -> Vec<String> {
    let map = std::fs::read_to_string(common::repo().join("cxx/exports.map")).expect("cxx/exports.map");
    map.lines().map(str::trim).filter(|l| l.starts_with("_Z")).map(|l| l.trim_end_matches(';').to_string()).collect()
}

#[test]
fn exports_tvm_ffi_cxx_symbols_and_no_rust_ones() {
    let cxx = cxx_exports();
    // 24 functions, vtable / typeinfo / typeinfo name of ModuleObj and Error, the type index cache.
    assert_eq!(cxx.len(), 32, "{cxx:?}");
    for name in ["_ZN3tvm3ffi6Module12LoadFromFileERKNS0_6StringE", "_ZTVN3tvm3ffi9ModuleObjE", "_ZTIN3tvm3ffi5ErrorE"]
    {
        assert!(cxx.iter().any(|c| c == name), "{name} is not in cxx/exports.map");
    }
    let syms = dynamic_symbols();
    let missing: Vec<_> = cxx.iter().filter(|c| !syms.contains(c)).collect();
    assert!(missing.is_empty(), "C++ symbols not exported: {missing:?}");
    let mangled: Vec<_> = syms
        .into_iter()
        .filter(|s| (s.starts_with("_Z") && !cxx.contains(s)) || s.starts_with("_R") || s.contains("rust"))
        .collect();
    assert!(mangled.is_empty(), "Rust or stray C++ symbols leak from the C library: {mangled:?}");
}

/// Every C export begins with `TVM`: the loader relies on it to tell, from a model library's
/// imports, whether the library calls the runtime by name (`ffi_library::expose_for_imports`).
#[test]
fn every_export_begins_with_tvm() {
    let cxx = cxx_exports();
    let other: Vec<_> = dynamic_symbols().into_iter().filter(|s| !s.starts_with("TVM") && !cxx.contains(s)).collect();
    assert!(other.is_empty(), "exports not named TVM*: {other:?}");
}

/// libtvm_ffi.so exports what tvm-ffi's own library exports, the `TVMFFI*` functions and its C++
/// symbols, and none of TVM 0.18's C API: apache-tvm's libtvm_runtime.so defines some of those
/// names with other signatures (`TVMBackendAnyListSetPackedArg`), and its JIT finds them by name.
#[test]
fn the_tvm_ffi_library_exports_tvm_ffi_alone() {
    if !library_dir().join("libtvm_ffi.so").is_file() {
        eprintln!("libtvm_ffi.so not built here (run `cargo build`): its exports are not checked");
        return;
    }
    let (cxx, syms) = (cxx_exports(), symbols_of("libtvm_ffi.so"));
    let ffi = syms.iter().filter(|s| s.starts_with("TVMFFI")).count();
    assert!(ffi >= 50, "only {ffi} TVMFFI* functions exported");
    let other: Vec<_> = syms.iter().filter(|s| !s.starts_with("TVMFFI") && !cxx.contains(s)).collect();
    assert!(other.is_empty(), "libtvm_ffi.so exports more than tvm-ffi's library: {other:?}");
    assert!(cxx.iter().all(|c| syms.contains(c)), "libtvm_ffi.so lacks tvm-ffi's C++ symbols");
}

/// `readelf -d` of a library in this build: its SONAME.
fn soname(file: &str) -> Option<String> {
    let so = library_dir().join(file);
    let out = Command::new("readelf").arg("-d").arg(&so).output().expect("`readelf` (binutils) must be installed");
    assert!(out.status.success(), "readelf {} failed", so.display());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.contains("(SONAME)"))?;
    Some(line.split('[').nth(1)?.trim_end_matches(']').to_string())
}

/// libtvm_ffi.so is built by `cargo build` (the workspace member tvm-ffi-lib), not by
/// `cargo test` of this package: it is checked where a build left it beside libtvm_runtime.so.
#[test]
fn each_library_names_itself() {
    assert_eq!(soname("libtvm_runtime.so").as_deref(), Some("libtvm_runtime.so"));
    if library_dir().join("libtvm_ffi.so").is_file() {
        assert_eq!(soname("libtvm_ffi.so").as_deref(), Some("libtvm_ffi.so"));
    } else {
        eprintln!("libtvm_ffi.so not built here (run `cargo build`): its SONAME is not checked");
    }
}

type ArrayAlloc = unsafe extern "C" fn(*const i64, i32, i32, i32, i32, i32, i32, *mut *mut std::ffi::c_void) -> i32;
type ArrayFree = unsafe extern "C" fn(*mut std::ffi::c_void) -> i32;
type GetGlobal = unsafe extern "C" fn(*const std::ffi::c_char, *mut *mut std::ffi::c_void) -> i32;

/// Exercise one loaded copy of the library through its own symbols.
fn use_library(lib: &libloading::Library) {
    unsafe {
        let alloc: libloading::Symbol<ArrayAlloc> = lib.get(b"TVMArrayAlloc").unwrap();
        let free: libloading::Symbol<ArrayFree> = lib.get(b"TVMArrayFree").unwrap();
        let get: libloading::Symbol<GetGlobal> = lib.get(b"TVMFuncGetGlobal").unwrap();
        let shape = [4i64, 4];
        let mut h = std::ptr::null_mut();
        assert_eq!(alloc(shape.as_ptr(), 2, 2, 32, 1, 1, 0, &mut h), 0);
        assert_eq!(free(h), 0);
        let mut f = std::ptr::null_mut();
        assert_eq!(get(c"runtime.SystemLib".as_ptr(), &mut f), 0);
        assert!(!f.is_null());
    }
}

#[test]
fn library_can_be_opened_twice_and_beside_another_copy() {
    let so = library_dir().join("libtvm_runtime.so");
    let a = unsafe { libloading::Library::new(&so) }.unwrap();
    let b = unsafe { libloading::Library::new(&so) }.unwrap();
    use_library(&a);
    use_library(&b);
    // A second, distinct copy (another image, e.g. another runtime build) beside the first.
    let dir = std::env::temp_dir().join(format!("tvm-runtime-copy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("libtvm_runtime_copy.so");
    std::fs::copy(&so, &copy).unwrap();
    let c = unsafe {
        libloading::os::unix::Library::open(
            Some(&copy),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    }
    .unwrap();
    use_library(&libloading::Library::from(c));
    drop(b);
    use_library(&a);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- every export runs inside the panic boundary (a source check) ----
//
// A panic that unwinds out of an `extern "C"` function aborts the host process, so each
// `#[no_mangle]` function in src/ffi/ must consist of one `ffi_boundary!("OwnName", { ... })`
// (src/ffi/boundary.rs), which turns panics and errors into the function's error value and the
// last-error message. The literal must be the function's own name: it is what the message
// reports.

/// Exports with a deliberate fast path before their boundary. Each is a hot path whose fast path
/// returns before any fallible work (src/runtime/threads/pool.rs `alloc_workspace_fast` /
/// `free_workspace_fast`; a tail call of a function object's C callable; a reference count,
/// and a deleter, which is a C function: a Rust one aborts rather than unwind, boundary or
/// not); the slow path must still run inside `ffi_boundary!` with the export's own name, which
/// is checked below.
const FAST_PATH_BEFORE_BOUNDARY: &[&str] = &[
    "TVMBackendAllocWorkspace",
    "TVMBackendFreeWorkspace",
    "TVMFFIFunctionCall",
    "TVMFFIObjectIncRef",
    "TVMFFIObjectDecRef",
];

/// `src` with comments and char literals blanked to spaces, and brackets inside string literals
/// too, keeping every byte offset: brackets and names there are not mistaken for code, while the
/// text of strings (the boundary's name literal) stays readable.
fn blank_comments_and_literals(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                // Raw string r"..." / r#"..."#.
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes)).into_bytes();
                let start = i + 2 + hashes;
                let end =
                    b[start..].windows(close.len()).position(|w| w == close.as_slice()).map_or(b.len(), |p| start + p);
                blank(&mut out, start, end);
                i = end + close.len();
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                // Keep the quotes and the text, blank only braces and parentheses inside.
                for c in &mut out[i + 1..j.min(b.len())] {
                    if matches!(*c, b'{' | b'}' | b'(' | b')') {
                        *c = b' ';
                    }
                }
                i = j + 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): only the former closes.
                let lit_end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 2)
                } else {
                    None
                };
                match lit_end {
                    Some(e) => {
                        blank(&mut out, i + 1, e);
                        i = e + 1;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 (only ASCII bytes are replaced)")
}

/// Offset just past the bracket that closes the one at `open` (`{`/`}` or `(`/`)`).
fn matching_close(code: &str, open: usize) -> usize {
    let b = code.as_bytes();
    let (o, c) = (b[open], if b[open] == b'{' { b'}' } else { b')' });
    let mut depth = 0usize;
    for (k, &ch) in b.iter().enumerate().skip(open) {
        if ch == o {
            depth += 1;
        } else if ch == c {
            depth -= 1;
            if depth == 0 {
                return k + 1;
            }
        }
    }
    panic!("unbalanced `{}` at byte {open}", o as char);
}

/// Every `#[no_mangle]` function in `src` as (name, body without the outer braces).
fn exported_bodies(file: &str, src: &str) -> Vec<(String, String)> {
    let code = blank_comments_and_literals(src);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("no_mangle") {
        let at = from + p;
        from = at + "no_mangle".len();
        let before = code[..at].trim_end();
        if !(before.ends_with("#[") || before.ends_with("#[unsafe(")) {
            continue; // an identifier that merely contains the word
        }
        // The item after the attribute: `pub [unsafe] extern "C" fn NAME(...) [-> T] { ... }`.
        let fn_at =
            code[from..].find("fn ").map(|q| from + q).unwrap_or_else(|| panic!("{file}: no fn after #[no_mangle]"));
        let name: String =
            code[fn_at + 3..].trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let params = fn_at + code[fn_at..].find('(').unwrap();
        let after_params = matching_close(&code, params);
        let open = after_params + code[after_params..].find('{').unwrap();
        let close = matching_close(&code, open);
        out.push((name, code[open + 1..close - 1].to_string()));
        from = close;
    }
    out
}

/// Why `body` is not "the whole body is `ffi_boundary!("name", ...)`", if it is not.
/// With `fast_path`, statements may come before the boundary, which must still be there.
fn boundary_problem(name: &str, body: &str, fast_path: bool) -> Option<String> {
    let literal = format!("\"{name}\"");
    let mut search = 0;
    let mut found = None;
    while let Some(p) = body[search..].find("ffi_boundary!") {
        let at = search + p;
        search = at + 1;
        let rest = body[at + "ffi_boundary!".len()..].trim_start();
        if let Some(args) = rest.strip_prefix('(') {
            if args.trim_start().starts_with(&literal) {
                found = Some(at);
                break;
            }
            let got = args.trim_start().split(',').next().unwrap_or("").trim();
            return Some(format!("its ffi_boundary! names {got}, not {literal}"));
        }
    }
    let Some(at) = found else {
        return Some(format!("its body has no `ffi_boundary!({literal}, {{ ... }})`"));
    };
    if !fast_path && !body[..at].trim().is_empty() {
        return Some(format!("code runs before its ffi_boundary!: {:?}", body[..at].trim()));
    }
    let open = at + body[at..].find('(').unwrap();
    let end = matching_close(body, open);
    let tail = body[end..].trim();
    if !(tail.is_empty() || tail == ";") {
        return Some(format!("code runs after its ffi_boundary!: {tail:?}"));
    }
    None
}

/// The functions the checked-in header declares (one declaration a line, ending in `);`).
fn header_functions() -> Vec<String> {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/tvm_runtime.h")).unwrap();
    let declarations = header.lines().filter(|l| l.ends_with(");") && !l.starts_with([' ', '*', '/', 't']));
    let names = declarations.filter_map(|l| l.split('(').next()?.rsplit([' ', '*']).next().map(str::to_string));
    names.collect()
}

#[test]
fn every_export_runs_inside_the_panic_boundary() {
    let mut files = common::rust_files(&common::repo().join("src/ffi"));
    files.sort();
    let (mut seen, mut problems) = (Vec::new(), Vec::new());
    for path in &files {
        let file = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().display().to_string();
        let src = std::fs::read_to_string(path).unwrap();
        for (name, body) in exported_bodies(&file, &src) {
            let fast_path = FAST_PATH_BEFORE_BOUNDARY.contains(&name.as_str());
            if let Some(why) = boundary_problem(&name, &body, fast_path) {
                problems.push(format!("{file}: {name}: {why}"));
            }
            seen.push(name);
        }
    }
    // The scan itself must have worked: every TVM export and every allow-listed name was found.
    let unseen: Vec<_> =
        TVM_EXPORTS.iter().chain(FAST_PATH_BEFORE_BOUNDARY).filter(|n| !seen.iter().any(|s| s == *n)).collect();
    assert!(unseen.is_empty(), "the scan of src/ffi/ did not find these exports: {unseen:?}");
    let declared = header_functions();
    let unscanned: Vec<_> = declared.iter().filter(|n| !seen.contains(n)).collect();
    assert!(declared.len() > 100 && unscanned.is_empty(), "header functions the scan missed: {unscanned:?}");
    assert!(
        problems.is_empty(),
        "#[no_mangle] functions not wholly inside ffi_boundary!(\"<own name>\", ...) (a panic would abort the host):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_boundary_scan_rejects_what_it_should() {
    let ok = r#"#[no_mangle] pub extern "C" fn A(x: i32) -> c_int { ffi_boundary!("A", { let s = "}{"; Ok(x) }) }"#;
    let [(name, body)] = &exported_bodies("t", ok)[..] else { panic!("one export expected") };
    assert_eq!(name, "A");
    assert_eq!(boundary_problem(name, body, false), None);
    for (bad, why) in [
        (r#"#[no_mangle] pub extern "C" fn A() {}"#, "no boundary"),
        (r#"#[no_mangle] pub extern "C" fn A() { ffi_boundary!("B", { Ok(()) }) }"#, "wrong name"),
        (r#"#[no_mangle] pub extern "C" fn A() { f(); ffi_boundary!("A", { Ok(()) }) }"#, "code before"),
        (r#"#[no_mangle] pub extern "C" fn A() { ffi_boundary!("A", { Ok(()) }); f() }"#, "code after"),
        (
            r#"#[no_mangle] pub extern "C" fn A() { // ffi_boundary!("A", {})
            f() }"#,
            "only in a comment",
        ),
    ] {
        let [(name, body)] = &exported_bodies("t", bad)[..] else { panic!("{why}: one export expected") };
        assert!(boundary_problem(name, body, false).is_some(), "{why}: accepted {bad}");
    }
    let fast = r#"#[no_mangle] pub extern "C" fn A() -> c_int { if f() { return 0; } ffi_boundary!("A", { Ok(1) }) }"#;
    let [(name, body)] = &exported_bodies("t", fast)[..] else { panic!("one export expected") };
    assert!(boundary_problem(name, body, false).is_some());
    assert_eq!(boundary_problem(name, body, true), None);
}
