//! `vm::Executable::parse` on arbitrary bytes (a Relax VM executable of TVM 0.18 or of the tvm-ffi
//! releases), then everything that reads a parsed executable without running it: `as_text`,
//! `stats` and `describe`.
//!
//! Properties checked: no panic, crash or unbounded allocation on any input; what parses prints,
//! and `describe` gives JSON naming the format and listing every VM function.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tvm_runtime::vm::describe::describe;
use tvm_runtime::vm::executable::{Executable, FuncKind};

fuzz_target!(|data: &[u8]| {
    let Ok(exec) = Executable::parse(data) else { return };
    let _ = exec.as_text();
    let _ = exec.stats();
    let d: serde_json::Value = serde_json::from_str(&describe(&exec)).expect("describe gives JSON");
    assert_eq!(d["format"], exec.format.name());
    let vm_functions = exec.functions.iter().filter(|f| f.kind != FuncKind::Packed).count();
    assert_eq!(d["functions"].as_array().expect("functions").len(), vm_functions);
});
