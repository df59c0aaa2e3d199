//! tvm-ffi's JSON object graphs (`ffi.FromJSONGraph`, `runtime::extra::serialization`) on
//! arbitrary text: parsed as JSON, then loaded as a graph.
//!
//! Properties checked: no panic, crash or stack overflow (cycles, forward references and deep
//! chains are refused or built); what loads saves, the saved graph loads, and saving that gives
//! the same graph (saving is a fixed point); once saved, a value and its reload have the same
//! structural hash (the first save may normalize, as tvm-ffi's does: dtype "handle6x4" prints
//! as "handle"); repr and deep copy run. (Structural equality is not required: a map keyed by an object, such as
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
    // Saving may normalize once (tvm-ffi prints every handle dtype as "handle", so a node of
    // dtype "handle6x4" reloads as "handle"), after which values are stable: a reload of the
    // reloaded value hashes as it does.
    let third = from_json_graph(&resaved).expect("a resaved graph loads");
    let (h2, h3) = (structural_equal::hash(&again, false, false), structural_equal::hash(&third, false, false));
    assert_eq!(h2.expect("hashes"), h3.expect("hashes"), "a reloaded value and its reload hash differently");
    let _ = repr(&v);
    let _ = deep_copy(&v);
});
