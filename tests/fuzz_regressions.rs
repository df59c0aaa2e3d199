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

// ---- tvm-ffi's JSON, object graphs and structural functions --------------------------------

use tvm_runtime::runtime::extra::json::{parse, stringify};
use tvm_runtime::runtime::extra::serialization::{from_json_graph, to_json_graph};
use tvm_runtime::runtime::extra::{deep_copy::deep_copy, repr::repr, structural_equal as se};
use tvm_runtime::runtime::function::packed::Value;
use tvm_runtime::runtime::function::registry;

fn global(name: &str, args: &[Value]) -> Value {
    tvm_runtime::init();
    registry::require(name).unwrap().call(args).unwrap()
}

fn load_graph(text: &str) -> tvm_runtime::runtime::Result<Value> {
    from_json_graph(&parse(text)?)
}

/// Hostile JSON texts: each refused (or parsed and printed) without a crash; nesting past the
/// parser's limit is refused.
#[test]
fn ffi_json_regressions_fail_cleanly() {
    tvm_runtime::init();
    for (name, data) in inputs("ffi_json") {
        let text = String::from_utf8_lossy(&data).into_owned();
        match std::panic::catch_unwind(|| parse(&text).map(|v| stringify(&v, 0).map(drop))) {
            Err(_) => panic!("{name}: the JSON parser panicked"),
            Ok(Ok(_)) if name.contains("deep-nesting") => panic!("{name}: nesting past the limit was accepted"),
            Ok(Err(e)) if name.contains("deep-nesting") => {
                assert!(e.message().contains("nesting too deep"), "{name}: {e}")
            }
            Ok(_) => {}
        }
    }
}

/// Hostile object graphs (cycles, a map holding itself, an index out of range): each refused
/// with a `ValueError` naming the node and why; the fuzzer's finds (a syntax error after objects
/// leaked them) are refused too.
#[test]
fn json_graph_regressions_are_refused() {
    for (name, data) in inputs("json_graph") {
        let text = String::from_utf8_lossy(&data).into_owned();
        let e = match std::panic::catch_unwind(|| load_graph(&text)) {
            Err(_) => panic!("{name}: the graph loader panicked"),
            Ok(Ok(_)) => panic!("{name}: a malformed graph was accepted"),
            Ok(Err(e)) => e,
        };
        // The hand-made graphs are well-formed JSON refused for what the graph says.
        if name.starts_with("hand-") {
            assert!(e.message().starts_with("ValueError: Invalid JSON Object Graph: node "), "{name}: {e}");
        }
    }
    let e = load_graph(r#"{"root_index":3,"nodes":[{"type":"ffi.String","data":"k"},{"type":"int","data":1},{"type":"ffi.Map","data":[0,3]},{"type":"ffi.Array","data":[2,2,2]}]}"#).unwrap_err();
    assert!(e.message().contains("node 3 refers to node 2, which contains it (a cycle)"), "{e}");
}

/// A chain of arrays 200 000 deep: listed children first (as writers list nodes) it loads with
/// no recursion; listed parents first it recurses, on a grown stack, until the nesting limit.
#[test]
fn deep_graphs_load_or_are_refused_without_overflowing_the_stack() {
    let n = 200_000;
    let node = |i: usize| format!(r#"{{"type":"ffi.Array","data":[{i}]}}"#);
    let children_first: Vec<String> =
        std::iter::once(r#"{"type":"int","data":7}"#.to_string()).chain((0..n).map(node)).collect();
    let text = format!(r#"{{"root_index":{n},"nodes":[{}]}}"#, children_first.join(","));
    // On a thread with a small stack, to show that depth does not depend on it.
    let v = std::thread::Builder::new().stack_size(512 * 1024).spawn(move || load_graph(&text).map(|_| ()));
    v.unwrap().join().unwrap().unwrap();

    let parents_first: Vec<String> =
        (1..=n).map(node).chain(std::iter::once(r#"{"type":"int","data":7}"#.to_string())).collect();
    let text = format!(r#"{{"root_index":0,"nodes":[{}]}}"#, parents_first.join(","));
    let e = load_graph(&text).unwrap_err();
    assert!(e.message().contains("the value is nested deeper than 131072 levels"), "{e}");
    // Within the limit, parents first loads too.
    let parents_first: Vec<String> =
        (1..=1000).map(node).chain(std::iter::once(r#"{"type":"int","data":7}"#.into())).collect();
    load_graph(&format!(r#"{{"root_index":0,"nodes":[{}]}}"#, parents_first.join(","))).unwrap();
}

/// Lists and dicts that hold themselves: structural equality and hashing refuse them with a
/// `ValueError`; repr prints them; deep copy copies the cycle; saving refuses it.
#[test]
fn cyclic_containers_are_refused_by_the_walks_that_cannot_end() {
    let list = global("ffi.List", &[Value::Int(1)]);
    global("ffi.ListAppend", &[list.clone(), list.clone()]);
    let dict = global("ffi.Dict", &[]);
    global("ffi.DictSetItem", &[dict.clone(), Value::Str("me".into()), dict.clone()]);
    for v in [&list, &dict] {
        let e = se::hash(v, false, false).unwrap_err();
        assert!(e.message().starts_with("ValueError: structural_hash: a `ffi."), "{e}");
        assert!(e.message().contains("contains itself (a cycle)"), "{e}");
        let e = se::equal(v, v, false, false).unwrap_err();
        assert!(e.message().contains("structural_equal: a `ffi."), "{e}");
        assert!(repr(v).unwrap().contains("..."), "repr marks the cycle");
        assert!(deep_copy(v).is_ok());
        assert!(to_json_graph(v, Value::Null).unwrap_err().message().contains("contains itself"));
    }
    // Break the cycles so that the containers are freed.
    global("ffi.ListClear", &[list]);
    global("ffi.DictClear", &[dict]);
}

/// The walks skip their memo for objects with one holder (met once, so no cycle starts there):
/// a cycle through such objects is still found where it closes, on the shared object, and
/// sharing is still seen by hashing, comparison and copies.
#[test]
fn cycles_through_objects_with_one_holder_are_found_and_sharing_is_kept() {
    let list = global("ffi.List", &[]);
    // list -> array (held by the list alone) -> map (held by the array alone) -> list
    let map = global("ffi.Map", &[Value::Str("back".into()), list.clone()]);
    global("ffi.ListAppend", &[list.clone(), global("ffi.Array", &[Value::Int(1), map])]);
    let e = se::hash(&list, false, false).unwrap_err();
    assert!(e.message().contains("structural_hash: a `ffi.List` contains itself (a cycle)"), "{e}");
    let e = se::equal(&list, &list, false, false).unwrap_err();
    assert!(e.message().contains("contains itself (a cycle)"), "{e}");
    let copy = deep_copy(&list).unwrap();
    let e = se::hash(&copy, false, false).unwrap_err();
    assert!(e.message().contains("contains itself"), "the copy closes its own cycle: {e}");
    assert!(to_json_graph(&list, Value::Null).unwrap_err().message().contains("contains itself"));
    global("ffi.ListClear", &[list]);
    global("ffi.ListClear", &[copy]);

    // [x, x] against [x, y] with y equal to x: equal and hashed alike (arrays are trees), and
    // the copy of [x, x] shares one copy of x.
    let x = || global("ffi.Array", &[Value::Int(7), Value::Str("a string past seven bytes".into())]);
    let one = x();
    let shared = global("ffi.Array", &[one.clone(), one]);
    let separate = global("ffi.Array", &[x(), x()]);
    assert_eq!(se::hash(&shared, false, false).unwrap(), se::hash(&separate, false, false).unwrap());
    assert!(se::equal(&shared, &separate, false, false).unwrap());
    let first_two = |v: &Value| {
        let items = global("ffi.ArrayGetItem", &[v.clone(), Value::Int(0)]);
        (items, global("ffi.ArrayGetItem", &[v.clone(), Value::Int(1)]))
    };
    let (a, b) = first_two(&deep_copy(&shared).unwrap());
    let (Value::Object(a), Value::Object(b)) = (a, b) else { panic!("objects") };
    assert_eq!(a.as_header(), b.as_header(), "one copy of the shared array");
    let (c, d) = first_two(&deep_copy(&separate).unwrap());
    let (Value::Object(c), Value::Object(d)) = (c, d) else { panic!("objects") };
    assert_ne!(c.as_header(), d.as_header(), "two copies of two arrays");
    let other = global("ffi.Array", &[first_two(&separate).0, x(), Value::Int(0)]);
    assert!(!se::equal(&shared, &other, false, false).unwrap());
}

/// Lists nested 100 000 deep (as Python builds them, one in another): hashed, compared,
/// printed, copied and saved and loaded, on grown stacks.
#[test]
fn deeply_nested_containers_walk_without_overflowing_the_stack() {
    let nest = || (0..100_000).fold(global("ffi.List", &[]), |inner, _| global("ffi.List", &[inner]));
    let (a, b) = (nest(), nest());
    assert_eq!(se::hash(&a, false, false).unwrap(), se::hash(&b, false, false).unwrap());
    assert!(se::equal(&a, &b, false, false).unwrap());
    assert!(repr(&a).unwrap().starts_with("[[[["));
    let copy = deep_copy(&a).unwrap();
    assert!(se::equal(&a, &copy, false, false).unwrap());
    let saved = to_json_graph(&a, Value::Null).unwrap();
    assert!(se::equal(&a, &from_json_graph(&saved).unwrap(), false, false).unwrap());
}

/// The values the seeds of the `json_graph` and `ffi_json` fuzzers are made of.
fn seed_values() -> Vec<(&'static str, Value)> {
    let inner = global("ffi.Array", &[Value::Int(1), Value::Float(2.5), Value::Str("s".into()), Value::Null]);
    let map = global("ffi.Map", &[Value::Str("a".into()), inner.clone(), Value::Str("b".into()), Value::Bool(true)]);
    let list = global("ffi.List", &[inner.clone(), map.clone(), inner.clone()]);
    let dict = global(
        "ffi.Dict",
        &[
            Value::Int(3),
            list.clone(),
            Value::Str("shape".into()),
            global("ffi.Shape", &[Value::Int(2), Value::Int(3)]),
        ],
    );
    vec![
        (
            "scalars",
            global(
                "ffi.Array",
                &[Value::Int(-7), Value::Float(-0.5), Value::Bool(false), Value::Null, Value::Bytes(vec![0, 1, 255])],
            ),
        ),
        ("shared", global("ffi.Array", &[inner.clone(), inner, map])),
        ("containers", global("ffi.Array", &[list, dict])),
        (
            "types",
            global(
                "ffi.Array",
                &[
                    Value::DataType(tvm_runtime::abi::DLDataType::parse("float16x4").unwrap()),
                    Value::Device(tvm_runtime::abi::DLDevice::cpu(1)),
                ],
            ),
        ),
    ]
}

/// The seeds of the `json_graph` and `ffi_json` fuzzers are what this library writes for
/// [`seed_values`] (`TVM_WRITE_FUZZ_SEEDS=1` rewrites them).
#[test]
fn json_fuzz_seeds_are_what_the_library_writes() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (name, v) in seed_values() {
        let graph = stringify(&to_json_graph(&v, Value::Null).unwrap(), 0).unwrap();
        let text = stringify(&v, 2).ok();
        // JSON text seeds: the value as JSON where it has a JSON form, and its graph's text.
        let files = [
            ("json_graph", name.to_string(), Some(graph.clone())),
            ("ffi_json", name.to_string(), text),
            ("ffi_json", format!("{name}-graph"), Some(graph)),
        ];
        for (dir, file, want) in files {
            let Some(want) = want else { continue };
            let path = corpus.join(dir).join(format!("{file}.json"));
            if std::env::var_os("TVM_WRITE_FUZZ_SEEDS").is_some() {
                std::fs::write(&path, &want).unwrap();
            }
            let have = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(
                have,
                want,
                "{}: not what the library writes (TVM_WRITE_FUZZ_SEEDS=1 rewrites it)",
                path.display()
            );
        }
        // Each graph seed loads back to its value.
        let back =
            load_graph(&std::fs::read_to_string(corpus.join("json_graph").join(format!("{name}.json"))).unwrap());
        assert!(se::equal(&v, &back.unwrap(), false, false).unwrap(), "{name}");
    }
}

/// A value sharing its objects many times over: 60 arrays, each holding the next twice (2^60
/// paths). Hashing, comparing and copying take each object once; its text would be 2^60 long,
/// which repr refuses past 64 MiB.
#[test]
fn values_sharing_objects_many_times_over_walk_once_per_object() {
    let shared = (0..60).fold(Value::Int(1), |a, _| global("ffi.Array", &[a.clone(), a]));
    let copy = deep_copy(&shared).unwrap();
    assert_eq!(se::hash(&shared, false, false).unwrap(), se::hash(&copy, false, false).unwrap());
    assert!(se::equal(&shared, &copy, false, false).unwrap());
    let (a, b) = (
        tvm_runtime::runtime::collections::recursive::hash(&shared),
        tvm_runtime::runtime::collections::recursive::hash(&copy),
    );
    assert_eq!(a.unwrap(), b.unwrap());
    assert!(tvm_runtime::runtime::collections::recursive::compare(&shared, &copy, true).unwrap().is_eq());
    let e = repr(&shared).unwrap_err();
    assert!(e.message().contains("repr: the text passes 64 MiB (objects shared many times over)"), "{e}");
    let saved = to_json_graph(&shared, Value::Null).unwrap();
    assert!(se::equal(&shared, &from_json_graph(&saved).unwrap(), false, false).unwrap());
}
