//! What a language model compiled by TVM calls between and around its kernels (MLC-LLM's
//! generation loop, apache-tvm's `relax.frontend.nn` models): token sampling and logit
//! processing ([`sampling`], in C++'s tie order: [`sort`]), weights loaded from shards into
//! a process-wide cache ([`tensor_cache`]) and the older, unpaged KV cache
//! ([`legacy_kv_cache`]). Registered under apache-tvm's names by [`install`].

pub mod legacy_kv_cache;
pub mod sampling;
pub mod sort;
pub mod tensor_cache;

/// Registers the language-model builtins.
pub(crate) fn install() {
    use crate::runtime::function::registry::register_built_in;
    for (name, f) in sampling::globals().into_iter().chain(legacy_kv_cache::globals()) {
        register_built_in(name, f);
    }
    for (name, f) in tensor_cache::globals() {
        register_built_in(&name, f);
    }
}
