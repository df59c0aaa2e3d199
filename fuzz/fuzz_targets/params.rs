//! `runtime::tensor::params::load_params` on arbitrary bytes (TVM's params format, `runtime.LoadParams`).
//!
//! Properties checked: no panic, crash or unbounded allocation on any input; and for every input
//! that loads, `save_params` writes it back and loading that gives the same names, dtypes, shapes
//! and bytes, and saving again gives the same bytes (save . load is idempotent).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tvm_runtime::runtime::tensor::params::{load_params, save_params};

fuzz_target!(|data: &[u8]| {
    let Ok(params) = load_params(data) else { return };
    let saved = save_params(params.iter().map(|(n, a)| (n.as_str(), a.tensor())))
        .expect("save_params failed on params that load_params accepted");
    let again = load_params(&saved).expect("load_params rejected what save_params wrote");
    assert_eq!(params.len(), again.len(), "param count changed in the round trip");
    for ((n1, a1), (n2, a2)) in params.iter().zip(&again) {
        assert_eq!(n1, n2, "param name changed in the round trip");
        assert_eq!(a1.dtype(), a2.dtype(), "dtype of `{n1}` changed in the round trip");
        assert_eq!(a1.shape(), a2.shape(), "shape of `{n1}` changed in the round trip");
        assert_eq!(
            a1.to_vec_u8().expect("read back"),
            a2.to_vec_u8().expect("read back"),
            "data of `{n1}` changed in the round trip"
        );
    }
    let saved2 = save_params(again.iter().map(|(n, a)| (n.as_str(), a.tensor()))).expect("second save");
    assert_eq!(saved, saved2, "save(load(save(x))) differs from save(x)");
    // Not asserted: save(load(x)) == x. The reader ignores the reserved u64 fields and the
    // device id of each record (TVM does too), and the writer puts 0 there.
});
