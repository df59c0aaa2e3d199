//! A language model on the paged KV cache through the Rust API: tests/data/lm-0.27/tiny_llm
//! (apache-tvm 0.27's `relax.frontend.nn` with its `nn.llm` paged KV cache, built by
//! tests/tvm027_runtime/tiny_llm.py), weights from its tensor cache. A prefill, a sequence forked
//! from it, both decoded together through the Rust API and the C API (one test body, [`Front`]):
//! the tokens apache-tvm's own runtime gave (expected.json), alone and from two threads on one VM each with its own cache (run under TSan by
//! scripts/tsan.sh); memory flat over 1000 decode steps and 100 add/remove cycles.

mod common;

use common::{call, f32s, get_function, load_module, ok, repo, Arg, Mod};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::Mutex;
use tvm_runtime::abi::DLDataType;
use tvm_runtime::abi::{type_code as tc, DLTensor, TVMValue};
use tvm_runtime::ffi::legacy::array::{TVMArrayCopyToBytes, TVMArrayFree};
use tvm_runtime::ffi::legacy::object::TVMObjectFree;
use tvm_runtime::runtime::function::packed::{Module, PackedFunc, Value};
use tvm_runtime::runtime::function::registry;
use tvm_runtime::runtime::object::header::ObjectRef;
use tvm_runtime::runtime::tensor::ndarray::{shape_tuple, NDArray};

const PROMPT: [i32; 13] = [3, 141, 59, 26, 5, 35, 89, 79, 32, 38, 46, 26, 43];
const STEPS: usize = 12;

/// The tests of this file one at a time (the memory test reads the process's RSS).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn folder() -> PathBuf {
    repo().join("tests/data/lm-0.27/tiny_llm")
}

fn global(name: &str) -> PackedFunc {
    registry::get(name).unwrap_or_else(|| panic!("global {name}"))
}

fn shape(dims: &[i64]) -> Value {
    Value::Object(shape_tuple(dims).to_object_ref())
}

/// What a generation does, through one front end or another (one test body for both).
trait Front: Sync {
    type Cache;
    fn vocab(&self) -> i64;
    fn cache(&self, max_tokens: i64) -> Self::Cache;
    /// `vm.builtin.kv_state_<op>(cache, ints...)`.
    fn kv_state(&self, op: &str, cache: &Self::Cache, ints: &[i64]);
    fn begin_forward(&self, cache: &Self::Cache, seqs: &[i64], lengths: &[i64]);
    /// `embed` then `fn_name` ("prefill" or "decode") on `ids` as (batch, len): the logits.
    fn forward(&self, fn_name: &str, cache: &Self::Cache, ids: &[i32], batch: i64, len: i64) -> Vec<f32>;
}

/// One forward pass over `ids` (split evenly over `seqs`): each sequence's next token (argmax
/// of its last logits).
fn step<F: Front>(f: &F, fn_name: &str, cache: &F::Cache, seqs: &[i64], ids: &[i32]) -> Vec<i32> {
    let per = ids.len() / seqs.len();
    f.begin_forward(cache, seqs, &vec![per as i64; seqs.len()]);
    let ids: Vec<i32> = ids.iter().map(|i| i % f.vocab() as i32).collect();
    let (batch, len) = if fn_name == "prefill" { (1, per as i64) } else { (seqs.len() as i64, 1) };
    let logits = f.forward(fn_name, cache, &ids, batch, len);
    f.kv_state("end_forward", cache, &[]);
    logits.chunks(f.vocab() as usize).skip(len as usize - 1).step_by(len as usize).map(argmax).collect()
}

/// The generation tests/tvm027_runtime/tiny_llm.py runs: tokens of sequence 0 and of 1.
fn generate<F: Front>(f: &F) -> Vec<Vec<i32>> {
    let cache = f.cache(512);
    f.kv_state("add_sequence", &cache, &[0]);
    let first = step(f, "prefill", &cache, &[0], &PROMPT)[0];
    f.kv_state("fork_sequence", &cache, &[0, 1, -1]);
    let mut next = vec![first, (first + 1) % f.vocab() as i32];
    let mut tokens = vec![vec![next[0]], vec![next[1]]];
    for _ in 0..STEPS {
        next = step(f, "decode", &cache, &[0, 1], &next);
        tokens[0].push(next[0]);
        tokens[1].push(next[1]);
    }
    tokens
}

// ---- the Rust API --------------------------------------------------------------------------

struct Lm {
    vm: Module,
    params: ObjectRef,
    hidden: i64,
    vocab: i64,
}

/// The parameter names and the (vocabulary, hidden) size of the model's tensor cache.
fn model_meta() -> (Vec<String>, i64, i64) {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder().join("tensor-cache.json")).unwrap()).unwrap();
    let names =
        meta["metadata"]["params"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect();
    let embed = &meta["records"][0]["records"][0];
    assert_eq!(embed["name"], "embed_tokens.weight");
    let dims: Vec<i64> = embed["shape"].as_array().unwrap().iter().map(|d| d.as_i64().unwrap()).collect();
    (names, dims[0], dims[1])
}

fn load() -> Lm {
    tvm_runtime::init();
    let dir = folder();
    let (names, vocab, hidden) = model_meta();
    global("vm.builtin.tensor_cache.load")
        .call(&[Value::Str(dir.to_str().unwrap().into()), Value::Int(1), Value::Int(0)])
        .unwrap();
    let names: Vec<Value> = names.into_iter().map(Value::Str).collect();
    let Value::Object(params) = global("vm.builtin.param_array_from_cache_by_name_unpacked").call(&names).unwrap()
    else {
        panic!("the parameters as an array")
    };
    let exec = Module::load_from_file(dir.join("tiny_llm.so").to_str().unwrap(), "").unwrap();
    let vm = exec.get_function("vm_load_executable", false).unwrap().unwrap().call(&[]).unwrap().into_module().unwrap();
    vm.get_function("vm_initialization", false)
        .unwrap()
        .unwrap()
        .call(&[Value::Int(1), Value::Int(0), Value::Int(2)])
        .unwrap();
    Lm { vm, params, hidden, vocab }
}

impl Lm {
    fn call(&self, name: &str, args: &[Value]) -> Value {
        let f = self.vm.get_function(name, false).unwrap().unwrap();
        f.call(args).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

impl Front for Lm {
    type Cache = Value;

    fn vocab(&self) -> i64 {
        self.vocab
    }

    fn cache(&self, max_tokens: i64) -> Value {
        let sizes = [4, max_tokens, 64, 16, 0].map(|n| shape(&[n]));
        self.call("create_paged_kv_cache", &sizes)
    }

    fn kv_state(&self, op: &str, cache: &Value, ints: &[i64]) {
        let args: Vec<Value> = std::iter::once(cache.clone()).chain(ints.iter().map(|&i| Value::Int(i))).collect();
        global(&format!("vm.builtin.kv_state_{op}")).call(&args).unwrap();
    }

    fn begin_forward(&self, cache: &Value, seqs: &[i64], lengths: &[i64]) {
        global("vm.builtin.kv_state_begin_forward").call(&[cache.clone(), shape(seqs), shape(lengths)]).unwrap();
    }

    fn forward(&self, fn_name: &str, cache: &Value, ids: &[i32], batch: i64, len: i64) -> Vec<f32> {
        let bytes: Vec<u8> = ids.iter().flat_map(|i| i.to_ne_bytes()).collect();
        let ids = NDArray::from_bytes(&[ids.len() as i64], DLDataType::parse("int32").unwrap(), &bytes).unwrap();
        let params = Value::Object(self.params.clone());
        let x = self.call("embed", &[Value::NDArray(ids), params.clone()]).into_ndarray().unwrap();
        let x = x.create_view(&[batch, len, self.hidden], x.dtype()).unwrap();
        let out = self.call(fn_name, &[Value::NDArray(x), cache.clone(), params]);
        f32s(&first_item(out).to_vec_u8().unwrap())
    }
}

// ---- the C API, as a C program calls it ----------------------------------------------------

struct CLm {
    _exec: Mod,
    vm: Mod,
    params: *mut c_void,
    hidden: i64,
    vocab: i64,
}

// SAFETY: the handles are reference-counted objects of this runtime, shared read-only here
// (the runtime's objects are Send + Sync); each thread makes its own calls and caches.
unsafe impl Sync for CLm {}

/// An owned object handle of the C API.
struct CObj(*mut c_void);

impl Drop for CObj {
    fn drop(&mut self) {
        ok(unsafe { TVMObjectFree(self.0) });
    }
}

fn c_object((v, code): (TVMValue, i32)) -> CObj {
    assert_eq!(code, tc::OBJECT_HANDLE);
    CObj(unsafe { v.v_handle })
}

fn c_shape(dims: &[i64]) -> CObj {
    let args: Vec<Arg<'_>> = dims.iter().map(|&d| Arg::Int(d)).collect();
    c_object(call(&common::global("runtime.ShapeTuple"), &args).unwrap())
}

fn c_load() -> CLm {
    let dir = folder();
    let (names, vocab, hidden) = model_meta();
    let dir_s = dir.to_str().unwrap();
    call(&common::global("vm.builtin.tensor_cache.load"), &[Arg::Str(dir_s), Arg::Int(1), Arg::Int(0)]).unwrap();
    let args: Vec<Arg<'_>> = names.iter().map(|n| Arg::Str(n)).collect();
    let params = c_object(call(&common::global("vm.builtin.param_array_from_cache_by_name_unpacked"), &args).unwrap());
    let exec = load_module(&dir.join("tiny_llm.so")).unwrap();
    let (vm, code) = call(&get_function(&exec, "vm_load_executable").unwrap(), &[]).unwrap();
    assert_eq!(code, tc::MODULE_HANDLE);
    let vm = Mod(unsafe { vm.v_handle });
    call(&get_function(&vm, "vm_initialization").unwrap(), &[Arg::Int(1), Arg::Int(0), Arg::Int(2)]).unwrap();
    let params = std::mem::ManuallyDrop::new(params).0;
    CLm { _exec: exec, vm, params, hidden, vocab }
}

impl Drop for CLm {
    fn drop(&mut self) {
        drop(CObj(self.params));
    }
}

impl Front for CLm {
    type Cache = CObj;

    fn vocab(&self) -> i64 {
        self.vocab
    }

    fn cache(&self, max_tokens: i64) -> CObj {
        let sizes = [4, max_tokens, 64, 16, 0].map(|n| c_shape(&[n]));
        let args: Vec<Arg<'_>> = sizes.iter().map(|s| Arg::Object(s.0)).collect();
        c_object(call(&get_function(&self.vm, "create_paged_kv_cache").unwrap(), &args).unwrap())
    }

    fn kv_state(&self, op: &str, cache: &CObj, ints: &[i64]) {
        let args: Vec<Arg<'_>> =
            std::iter::once(Arg::Object(cache.0)).chain(ints.iter().map(|&i| Arg::Int(i))).collect();
        call(&common::global(&format!("vm.builtin.kv_state_{op}")), &args).unwrap();
    }

    fn begin_forward(&self, cache: &CObj, seqs: &[i64], lengths: &[i64]) {
        let (s, l) = (c_shape(seqs), c_shape(lengths));
        call(
            &common::global("vm.builtin.kv_state_begin_forward"),
            &[Arg::Object(cache.0), Arg::Object(s.0), Arg::Object(l.0)],
        )
        .unwrap();
    }

    fn forward(&self, fn_name: &str, cache: &CObj, ids: &[i32], batch: i64, len: i64) -> Vec<f32> {
        // int32 ids in a host tensor of 4-byte elements.
        let mut ids_t = common::HostTensor::new(
            &[ids.len() as i64],
            &ids.iter().map(|&i| f32::from_bits(i as u32)).collect::<Vec<_>>(),
        );
        ids_t.t.dtype = DLDataType::parse("int32").unwrap();
        let (x, code) =
            call(&get_function(&self.vm, "embed").unwrap(), &[Arg::Tensor(ids_t.ptr()), Arg::Object(self.params)])
                .unwrap();
        assert_eq!(code, tc::NDARRAY_HANDLE);
        let x = unsafe { x.v_handle } as *mut DLTensor;
        let mut values = vec![0u8; (batch * len * self.hidden * 4) as usize];
        ok(unsafe { TVMArrayCopyToBytes(x, values.as_mut_ptr() as *mut c_void, values.len()) });
        ok(unsafe { TVMArrayFree(x) });
        let mut x = common::HostTensor::new(&[batch, len, self.hidden], &f32s(&values));
        let f = get_function(&self.vm, fn_name).unwrap();
        let out = c_object(call(&f, &[Arg::Tensor(x.ptr()), Arg::Object(cache.0), Arg::Object(self.params)]).unwrap());
        let (logits, code) = call(&common::global("runtime.ArrayGetItem"), &[Arg::Object(out.0), Arg::Int(0)]).unwrap();
        assert_eq!(code, tc::NDARRAY_HANDLE);
        let logits = unsafe { logits.v_handle } as *mut DLTensor;
        let mut bytes = vec![0u8; (batch * len * self.vocab * 4) as usize];
        ok(unsafe { TVMArrayCopyToBytes(logits, bytes.as_mut_ptr() as *mut c_void, bytes.len()) });
        ok(unsafe { TVMArrayFree(logits) });
        f32s(&bytes)
    }
}

fn first_item(v: Value) -> NDArray {
    let Value::Object(o) = v else { panic!("expected (logits, cache)") };
    let item = global("runtime.ArrayGetItem").call(&[Value::Object(o), Value::Int(0)]).unwrap();
    item.into_ndarray().unwrap()
}

fn argmax(row: &[f32]) -> i32 {
    // The first of equal maxima, as numpy's argmax.
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    best as i32
}

fn expected() -> Vec<Vec<i32>> {
    let text = std::fs::read_to_string(folder().join("expected.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_array().unwrap().iter().map(|t| t.as_i64().unwrap() as i32).collect())
        .collect()
}

#[test]
fn generates_the_tokens_apache_tvm_generates() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(generate(&load()), expected(), "the Rust API");
    assert_eq!(generate(&c_load()), expected(), "the C API");
}

fn threads_get_the_tokens_of_one<F: Front>(f: &F) {
    let alone = generate(f);
    let together: Vec<Vec<Vec<i32>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2).map(|_| s.spawn(|| (0..3).map(|_| generate(f)).collect::<Vec<_>>())).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(together.len(), 6);
    for tokens in together {
        assert_eq!(tokens, alone);
    }
}

#[test]
fn two_threads_each_with_its_own_cache_get_the_tokens_of_one() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    threads_get_the_tokens_of_one(&load());
    threads_get_the_tokens_of_one(&c_load());
}

fn rss_kib() -> i64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: i64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4
}

#[test]
fn memory_stays_flat_over_long_decodes_and_sequence_churn() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lm = load();
    let cache = lm.cache(2048);
    lm.kv_state("add_sequence", &cache, &[0]);
    let mut next = step(&lm, "prefill", &cache, &[0], &PROMPT);
    let mut measured = None;
    for i in 0..1000 {
        if i == 100 {
            measured = Some(rss_kib());
        }
        next = step(&lm, "decode", &cache, &[0], &next);
    }
    for cycle in 1..=100 {
        lm.kv_state("add_sequence", &cache, &[cycle]);
        step(&lm, "prefill", &cache, &[cycle], &PROMPT);
        lm.kv_state("remove_sequence", &cache, &[cycle]);
    }
    let grown = rss_kib() - measured.unwrap();
    assert!(grown < 2048, "RSS grew by {grown} KiB over 900 decode steps and 100 add/remove cycles");
    let pages = global("vm.builtin.attention_kv_cache_get_num_available_pages")
        .call(&[cache.clone()])
        .unwrap()
        .as_int()
        .unwrap();
    let length =
        global("vm.builtin.attention_kv_cache_get_total_sequence_length").call(&[cache]).unwrap().as_int().unwrap();
    assert_eq!(length, PROMPT.len() as i64 + 1000, "sequence 0 alone, every other sequence gone");
    assert_eq!(pages, 2048 / 16 + 1 - (length + 15) / 16, "every page of the removed sequences back");
}
