//! tvm-ffi's JSON text (`ffi.json.Parse` / `Stringify`, `runtime::extra::json`) on arbitrary
//! text.
//!
//! Properties checked: no panic, crash or stack overflow at any nesting; what parses prints, and
//! the printed text parses to a value that prints the same (printing is a fixed point).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tvm_runtime::runtime::extra::json::{parse, stringify};

fuzz_target!(|data: &[u8]| {
    tvm_runtime::init();
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(v) = parse(text) else { return };
    let printed = stringify(&v, 0).expect("a parsed value prints");
    let again = parse(&printed).expect("printed JSON parses");
    assert_eq!(stringify(&again, 0).expect("prints"), printed, "printing is not a fixed point");
});
