//! tvm-ffi's JSON object graphs (`ffi.FromJSONGraph`, `runtime::extra::serialization`) on
//! arbitrary text: parsed as JSON, then loaded as a graph.
//!
//! Properties checked: no panic, crash or stack overflow (cycles, forward references and deep
//! chains are refused or built); what loads saves, the saved graph loads, and saving that gives
//! the same graph (saving is a fixed point); the two values have the same structural hash; repr
//! and deep copy run. (Structural equality is not required: a map keyed by an object, such as
//! `{[]: 1}`, is keyed by a new object after loading, and tvm-ffi compares object keys by
//! identity.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use tvm_runtime::runtime::extra::json::{parse, stringify};
use tvm_runtime::runtime::extra::serialization::{from_json_graph, to_json_graph};
use tvm_runtime::runtime::extra::{deep_copy::deep_copy, repr::repr, structural_equal};
use tvm_runtime::runtime::function::packed::Value;

fuzz_target!(|data: &[u8]| {
    tvm_runtime::init();
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(graph) = parse(text) else { return };
    let Ok(v) = from_json_graph(&graph) else { return };
    let saved = to_json_graph(&v, Value::Null).expect("a loaded value saves");
    let again = from_json_graph(&saved).expect("a saved graph loads");
    let resaved = to_json_graph(&again, Value::Null).expect("a reloaded value saves");
    let text = |g: &Value| stringify(g, 0).expect("a graph prints");
    assert_eq!(text(&saved), text(&resaved), "saving a loaded graph again changed it");
    let (h1, h2) = (structural_equal::hash(&v, false, false), structural_equal::hash(&again, false, false));
    assert_eq!(h1.expect("hashes"), h2.expect("hashes"), "a value and its reload hash differently");
    let _ = repr(&v);
    let _ = deep_copy(&v);
});
