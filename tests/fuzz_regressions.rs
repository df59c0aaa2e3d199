//! Inputs the fuzzers (fuzz/) once crashed or misbehaved on, replayed through the same parsers:
//! each must now give an error (or a valid result), never a panic, crash or huge allocation.

use std::ffi::c_void;
use std::path::Path;
use std::sync::Arc;
use tvm_runtime::runtime::function::packed::Module;
use tvm_runtime::runtime::module::blob::load_import_tree;
use tvm_runtime::runtime::module::library::{LibraryModule, SymbolSource};

/// A library with no symbols at all.
struct NoSymbols;

impl SymbolSource for NoSymbols {
    fn symbol(&self, _name: &str) -> Option<*mut c_void> {
        None
    }
}

/// The inputs in `fuzz/regressions/<target>/` (README.md files excluded). A missing, unreadable
/// or empty directory fails the test: a regression suite that silently replays nothing would
/// pass forever.
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions").join(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!("{}: cannot read the regression inputs of fuzz target `{target}`: {e}", dir.display())
    });
    let mut out: Vec<_> = entries
        .map(|e| e.unwrap_or_else(|e| panic!("{}: cannot list an entry: {e}", dir.display())))
        .filter(|e| e.path().is_file() && e.file_name() != "README.md")
        .map(|e| {
            let data = std::fs::read(e.path()).unwrap_or_else(|err| panic!("{}: {err}", e.path().display()));
            (e.file_name().to_string_lossy().into_owned(), data)
        })
        .collect();
    assert!(
        !out.is_empty(),
        "{}: no regression inputs for fuzz target `{target}`; the test would replay nothing (see fuzz/regressions/README.md)",
        dir.display()
    );
    out.sort();
    out
}

#[test]
fn blob_regressions_fail_cleanly() {
    for (name, data) in inputs("blob") {
        let lib = Module::from_node(LibraryModule::new(Arc::new(NoSymbols)));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load_import_tree(&data, lib).map(|_| ())));
        assert!(r.is_ok(), "{name}: the blob loader panicked");
    }
}

/// Hostile Relax VM executables: each is refused with an error, or, if it is well formed, is
/// printed and described without a panic (one such file asked `describe` for a rank of 2^53).
#[test]
fn relax_exec_regressions_fail_cleanly() {
    for (name, data) in inputs("relax_exec") {
        let r = std::panic::catch_unwind(|| {
            if let Ok(exec) = tvm_runtime::vm::Executable::parse(&data) {
                let _ = exec.as_text();
                let _ = exec.stats();
                let _ = tvm_runtime::vm::describe::describe(&exec);
            }
        });
        assert!(r.is_ok(), "{name}: the executable parser, printer or describe panicked");
    }
}

/// The seeds of the `relax_exec` fuzzer (real executables of both generations) all parse.
#[test]
fn relax_exec_seeds_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/relax_exec");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let data = std::fs::read(&p).unwrap();
        tvm_runtime::vm::Executable::parse(&data).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        n += 1;
    }
    assert_eq!(n, 11);
}

#[test]
fn params_regressions_fail_cleanly() {
    for (name, data) in inputs("params") {
        let r = std::panic::catch_unwind(|| tvm_runtime::runtime::tensor::params::load_params(&data).map(|_| ()));
        assert!(r.is_ok(), "{name}: the params reader panicked");
    }
}

#[test]
fn graph_regressions_fail_cleanly() {
    for (name, data) in inputs("graph_json") {
        let text = String::from_utf8_lossy(&data).into_owned();
        let r = std::panic::catch_unwind(|| tvm_runtime::graph::Graph::parse(&text).map(|_| ()));
        assert!(r.is_ok(), "{name}: the graph parser panicked");
    }
}

#[test]
fn elf_regressions_are_refused() {
    use tvm_runtime::runtime::module::elf::{check, Expected};
    let any_machine = Expected { machine: None, ..Expected::host() };
    for (name, data) in inputs("elf") {
        match std::panic::catch_unwind(|| check(&data[..], any_machine).map_err(|e| e.to_string())) {
            Err(_) => panic!("{name}: the ELF check panicked"),
            Ok(Ok(())) => panic!("{name}: a malformed library was accepted"),
            Ok(Err(_)) => {}
        }
    }
}

/// The ELF target's seeds are libraries the check accepts (each for its byte order), so the
/// fuzzer starts from inputs that pass and mutates them into ones that must not.
#[test]
fn elf_seeds_are_accepted() {
    use tvm_runtime::runtime::module::elf::{check, Expected};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/elf");
    for name in ["hand_minimal.so", "hand_extended_section_count.so", "hand_big_endian.so", "cc_tiny.so"] {
        let data = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = Expected { little_endian: !name.contains("big_endian"), machine: None };
        if let Err(e) = check(&data[..], expected) {
            panic!("{name}: {e}");
        }
    }
}

/// Packet streams the `rpc_session` fuzzer found: each packet gets a reply (one asked for a
/// 2^57-byte buffer, now refused by the session's memory limit).
#[test]
fn rpc_session_regressions_fail_cleanly() {
    use tvm_runtime::rpc::env::Env;
    use tvm_runtime::rpc::session::{Session, Step};
    tvm_runtime::init();
    for (name, data) in inputs("rpc_session") {
        let dir = std::env::temp_dir().join(format!("rpc-regression-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut session = Session::new(Env::new(dir.clone()));
        let mut rest = &data[..];
        while rest.len() >= 8 {
            let len = (u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize).min(rest.len() - 8);
            let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session.handle(&rest[8..8 + len])));
            match step {
                Ok(Step::End) => break,
                Ok(Step::Reply(_)) => {}
                Err(_) => panic!("{name}: the session panicked"),
            }
            rest = &rest[8 + len..];
        }
        drop(session);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
