//! tvm-ffi's structural equality and hashing (`ffi.StructuralEqual` / `ffi.StructuralHash`),
//! recursive comparison, repr and deep copy on two values built from the input by a small stack
//! machine: ints, floats, strings, bytes, shapes, `Array`, `Map`, `List`, `Dict`, and lists and
//! dicts that hold themselves (cycles, which only these mutable containers can form).
//!
//! Properties checked: no panic, crash or stack overflow; equal values hash alike (structurally
//! and recursively); a value equals itself unless it holds a cycle, which is refused with an
//! error; its deep copy hashes as it does. (A deep copy need not be structurally equal: a map
//! keyed by an object is keyed by the key's copy, and tvm-ffi compares object keys by identity.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use tvm_runtime::runtime::collections::recursive;
use tvm_runtime::runtime::extra::{deep_copy::deep_copy, repr::repr, structural_equal as se};
use tvm_runtime::runtime::function::packed::Value;
use tvm_runtime::runtime::function::registry;

/// The most values a machine keeps on its stack, and the most items one container takes.
const STACK: usize = 64;
const TAKE: usize = 8;

fn call(name: &str, args: &[Value]) -> Option<Value> {
    registry::get(name).and_then(|f| f.call(args).ok())
}

/// A value built by the ops in `ops`; the lists and dicts made to hold themselves go to
/// `cycles`, to be cleared at the end (a reference cycle is never freed otherwise).
fn build(ops: &[u8], cycles: &mut Vec<(&'static str, Value)>) -> Option<Value> {
    let mut stack: Vec<Value> = Vec::new();
    let mut bytes = ops.iter().copied();
    while let Some(op) = bytes.next() {
        let arg = bytes.next().unwrap_or(0);
        let take = |stack: &mut Vec<Value>| -> Vec<Value> {
            let n = (arg as usize % (TAKE + 1)).min(stack.len());
            stack.split_off(stack.len() - n)
        };
        let v = match op % 12 {
            0 => Value::Int(arg as i64 - 128),
            1 => Value::Float(arg as f64 / 7.0),
            2 => Value::Str(format!("s{}", arg % 16)),
            3 => Value::Bytes(vec![arg; arg as usize % 4]),
            4 => call("ffi.Shape", &(0..arg % 4).map(|d| Value::Int(d as i64)).collect::<Vec<_>>())?,
            5 => call("ffi.Array", &take(&mut stack))?,
            6 => call("ffi.List", &take(&mut stack))?,
            7 | 8 => {
                let mut items = take(&mut stack);
                items.truncate(items.len() / 2 * 2);
                call(if op % 12 == 7 { "ffi.Map" } else { "ffi.Dict" }, &items)?
            }
            // The top list holds itself.
            9 => {
                let top = stack.last()?.clone();
                call("ffi.ListAppend", &[top.clone(), top.clone()])?;
                cycles.push(("ffi.ListClear", top));
                continue;
            }
            // The top dict holds itself under a key.
            10 => {
                let top = stack.last()?.clone();
                call("ffi.DictSetItem", &[top.clone(), Value::Int(arg as i64), top.clone()])?;
                cycles.push(("ffi.DictClear", top));
                continue;
            }
            _ => stack.last()?.clone(),
        };
        if stack.len() == STACK {
            stack.remove(0);
        }
        stack.push(v);
    }
    stack.pop()
}

fuzz_target!(|data: &[u8]| {
    tvm_runtime::init();
    let cut = data.first().map_or(0, |&b| b as usize % data.len().max(1));
    let (a, b) = data.split_at(cut);
    let mut cycles = Vec::new();
    let (a, b) = (build(a, &mut cycles), build(b, &mut cycles));
    if let (Some(a), Some(b)) = (a, b) {
        check(&a, &b);
    }
    for (clear, v) in cycles {
        call(clear, &[v]);
    }
});

fn check(a: &Value, b: &Value) {
    let (a, b) = (a.clone(), b.clone());
    let _ = repr(&a);
    if let (Ok(true), Ok(ha), Ok(hb)) = (se::equal(&a, &b, false, false), se::hash(&a, false, false), se::hash(&b, false, false)) {
        assert_eq!(ha, hb, "structurally equal values hash differently");
    }
    // Recursive comparison takes a pair met again as equal, so `[l]` holding itself equals
    // `[[m]]` holding itself while their hashes differ: the property holds for acyclic values.
    let acyclic = |v: &Value| repr(v).is_ok_and(|r| !r.contains("..."));
    if acyclic(&a) && acyclic(&b) {
        if let (Ok(o), Ok(ha), Ok(hb)) = (recursive::compare(&a, &b, true), recursive::hash(&a), recursive::hash(&b)) {
            if o.is_eq() {
                assert_eq!(ha, hb, "recursively equal values hash differently");
            }
        }
    }
    // A value equals itself and its copy, unless it holds a cycle (then both are refused).
    match se::equal(&a, &a, false, false) {
        Ok(same) => {
            assert!(same, "a value differs from itself");
            // Not when a cycle hides where equality does not look (inside a map's key): its
            // copy would be a cycle too, which nothing frees. Repr marks every cycle ("...").
            if acyclic(&a) {
                if let (Ok(copy), Ok(h)) = (deep_copy(&a), se::hash(&a, false, false)) {
                    assert_eq!(se::hash(&copy, false, false).expect("hashes"), h, "a deep copy hashes differently");
                }
            }
        }
        Err(e) => assert!(e.message().contains("contains itself"), "unexpected refusal: {e}"),
    }
}
