//! What a language model compiled by TVM calls between and around its kernels (MLC-LLM's
//! generation loop, apache-tvm's `relax.frontend.nn` models): token sampling and logit
//! processing ([`sampling`], in C++'s tie order: [`sort`]), weights loaded from shards into
//! a process-wide cache ([`tensor_cache`]), the older, unpaged KV cache ([`legacy_kv_cache`]),
//! and the two states a model steps sequences through ([`kv_state`]): the paged KV cache of
//! attention ([`paged_kv_cache`]) and the state of recurrent models ([`rnn_state`]). Registered
//! under apache-tvm's names by [`install`].

mod args;
pub mod kv_state;
pub mod legacy_kv_cache;
pub mod paged_kv_cache;
pub mod rnn_state;
pub mod sampling;
pub mod sort;
pub mod tensor_cache;

/// Registers the language-model builtins.
pub(crate) fn install() {
    use crate::runtime::function::registry::register_built_in;
    const KV_STATES: &[kv_state::Resolver] = &[rnn_state::as_kv_state, paged_kv_cache::as_kv_state];
    let all = [
        sampling::globals(),
        legacy_kv_cache::globals(),
        rnn_state::globals(),
        kv_state::globals(KV_STATES),
        paged_kv_cache::globals(),
    ];
    for (name, f) in all.into_iter().flatten() {
        register_built_in(name, f);
    }
    for (name, f) in tensor_cache::globals() {
        register_built_in(&name, f);
    }
}

#[cfg(test)]
mod tests {
    use crate::abi::DLDataType;
    use crate::runtime::tensor::ndarray::NDArray;

    fn rows(values: &[f32]) -> NDArray {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        NDArray::from_bytes(&[values.len() as i64, 1], DLDataType::parse("float32").unwrap(), &bytes).unwrap()
    }

    /// What one thread does: its own cache grown step by step, a token sampled from each
    /// step's logits, its own tensors in the shared tensor cache, and rows appended to one
    /// cache all threads share.
    fn work(
        t: usize,
        shared: &crate::runtime::object::header::ObjPtr<super::legacy_kv_cache::LegacyKvCacheObj>,
    ) -> Vec<i64> {
        let own = super::legacy_kv_cache::create(&rows(&[0.0]), &[1, 1], 0).unwrap();
        let mut tokens = Vec::new();
        for step in 0..200 {
            let logits: Vec<f32> = (0..64).map(|i| ((i * 7 + step * 3 + t) % 11) as f32).collect();
            super::legacy_kv_cache::append_rows(&own, &rows(&logits[..4])).unwrap();
            tokens.push(super::sampling::top_p_from_logits(&logits, 0.7, 0.9, (step % 10) as f64 / 10.0).unwrap());
            let name = format!("lm-threads.{t}.{}", step % 5);
            super::tensor_cache::update(&name, rows(&logits[..2]), true).unwrap();
            assert!(super::tensor_cache::get(&name).is_some());
            super::legacy_kv_cache::append_rows(shared, &rows(&[t as f32])).unwrap();
        }
        tokens.push(super::legacy_kv_cache::filled_rows(&own));
        tokens
    }

    #[test]
    fn threads_on_their_own_and_shared_objects_get_what_one_thread_gets() {
        let shared = super::legacy_kv_cache::create(&rows(&[0.0]), &[1, 1], 0).unwrap();
        let alone: Vec<Vec<i64>> = (0..4).map(|t| work(t, &shared)).collect();
        let together: Vec<Vec<i64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let shared = &shared;
                    s.spawn(move || work(t, shared))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(alone, together);
        assert_eq!(super::legacy_kv_cache::filled_rows(&shared), 2 * 4 * 200, "every append of every thread");
    }
}
