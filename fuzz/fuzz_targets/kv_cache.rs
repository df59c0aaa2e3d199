//! The paged KV cache's bookkeeping (`vm.builtin.paged_attention_kv_cache_create` and the
//! `kv_state_*` / `attention_kv_cache_*` calls) on a program of (op, argument) byte pairs:
//! sequences added, removed, forked at any position, popped, slid; forward passes of any
//! lengths, with token trees of any parents, then attention (every kernel a no-op) and commits.
//! Two small caches, with and without sliding windows, one of a few pages so that it fills up.
//!
//! Properties checked: no panic, crash or hang; errors are errors (the runtime's, with a
//! message); a cache all of whose sequences are removed is empty.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::runtime::container::{array_object, string_object};
use tvm_runtime::runtime::function::packed::{PackedFunc, Value};
use tvm_runtime::runtime::function::registry;
use tvm_runtime::runtime::tensor::ndarray::{shape_tuple, NDArray};

const HEADS: i64 = 2;
const DIM: i64 = 4;

fn call(name: &str, args: &[Value]) -> Result<Value, String> {
    let f = registry::get(name).unwrap_or_else(|| panic!("{name} is not registered"));
    f.call(args).map_err(|e| e.to_string())
}

fn shape(d: &[i64]) -> Value {
    Value::Object(shape_tuple(d).to_object_ref())
}

fn create(pages_of_tokens: i64, sliding: bool) -> Value {
    let noop = PackedFunc::from_typed(|_| Ok(Value::Null));
    let tirx = || Value::Object(array_object(vec![string_object("tirx"), noop.to_object_ref()]));
    let init = NDArray::empty(&[], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
    let mut a = vec![shape(&[4, pages_of_tokens, 32, 4, sliding as i64]), shape(&[0, 1]), Value::Int(HEADS)];
    a.extend([Value::Int(HEADS), Value::Int(DIM), Value::Int(DIM), shape(&[0]), Value::Int(0), Value::Int(2 * sliding as i64)]);
    a.extend([Value::Float(1.0), Value::Float(1e4), Value::Null, Value::NDArray(init), Value::Func(noop.clone()), Value::Null]);
    a.extend((15..=21).map(|_| tirx()));
    a.push(Value::Object(array_object(vec![])));
    a.push(Value::Object(array_object(vec![noop.to_object_ref()])));
    a.extend((24..=27).map(|_| Value::Func(noop.clone())));
    call("vm.builtin.paged_attention_kv_cache_create", &a).unwrap()
}

fn run(cache: &Value, program: &[u8]) {
    let on = |name: &str, rest: Vec<Value>| {
        let args: Vec<Value> = std::iter::once(cache.clone()).chain(rest).collect();
        if let Err(e) = call(name, &args) {
            assert!(!e.is_empty() && !e.contains("panic"), "{name}: {e}");
        }
    };
    let mut bytes = program.iter().copied();
    let mut in_pass = 0i64;
    while let Some(op) = bytes.next() {
        let arg = bytes.next().unwrap_or(0) as i64;
        let seq = arg % 6;
        match op % 10 {
            0 => on("vm.builtin.kv_state_add_sequence", vec![Value::Int(seq)]),
            1 => on("vm.builtin.kv_state_remove_sequence", vec![Value::Int(seq)]),
            2 => on("vm.builtin.kv_state_fork_sequence", vec![Value::Int(seq), Value::Int(arg / 6 % 6), Value::Int(arg / 36 - 1)]),
            3 => on("vm.builtin.kv_state_popn", vec![Value::Int(seq), Value::Int(arg / 6)]),
            4 | 5 => {
                // A pass over up to three sequences; with a token tree when the op is odd.
                let ids: Vec<i64> = (0..1 + arg % 3).map(|i| (seq + i) % 6).collect();
                let lengths: Vec<i64> = ids.iter().map(|_| bytes.next().unwrap_or(1) as i64 % 9).collect();
                in_pass = lengths.iter().sum();
                let mut args = vec![shape(&ids), shape(&lengths)];
                if op % 2 == 1 {
                    let parents: Vec<i64> = (0..in_pass).map(|_| bytes.next().unwrap_or(0) as i64 % 8 - 1).collect();
                    args.push(shape(&parents));
                }
                on("vm.builtin.kv_state_begin_forward", args);
            }
            6 => {
                let qkv = NDArray::empty(&[in_pass.max(1), 3 * HEADS, DIM], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
                let o = NDArray::empty(&[in_pass.max(1), HEADS, DIM], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
                let layer = Value::Int(arg % 2);
                on("vm.builtin.attention_kv_cache_attention_with_fused_qkv", vec![layer, Value::Float(0.5), Value::NDArray(qkv), Value::NDArray(o)]);
            }
            7 => on("vm.builtin.attention_kv_cache_commit_accepted_token_tree_nodes", vec![shape(&[seq]), shape(&[arg / 6 % 9 - 1])]),
            8 => on("vm.builtin.attention_kv_cache_enable_sliding_window_for_seq", vec![Value::Int(seq), Value::Int(arg / 6 % 20), Value::Int(arg % 5)]),
            _ => {
                on("vm.builtin.kv_state_end_forward", vec![]);
                on("vm.builtin.attention_kv_cache_get_total_sequence_length", vec![]);
            }
        }
    }
    for seq in 0..6 {
        let _ = call("vm.builtin.kv_state_remove_sequence", &[cache.clone(), Value::Int(seq)]);
    }
    let empty = call("vm.builtin.attention_kv_cache_empty", &[cache.clone()]).unwrap();
    assert!(matches!(empty, Value::Bool(true)), "every sequence removed, the cache is empty");
}

fuzz_target!(|data: &[u8]| {
    tvm_runtime::init();
    let (sliding, program) = match data.split_first() {
        Some((&first, rest)) => (first % 2 == 1, rest),
        None => return,
    };
    // 24 tokens of pages: forks and long passes fill it.
    run(&create(24, sliding), program);
});
