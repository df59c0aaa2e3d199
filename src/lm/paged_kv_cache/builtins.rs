//! The `vm.builtin.attention_kv_cache_*` calls on the paged cache, with apache-tvm's names and
//! argument orders; committing the accepted nodes of token trees; reading stored keys and values
//! back (the tests' debug getter).

use super::attention::{fail, launch, nd, K};
use super::{cache_arg, AttnKind, State};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::tensor::ndarray::NDArray;

pub(super) fn globals() -> Vec<(&'static str, PackedFunc)> {
    let f = |name, body: fn(Args<'_>) -> Result<Value>| (name, PackedFunc::from_typed(body));
    vec![
        f("vm.builtin.attention_kv_cache_attention_with_fused_qkv", |a| {
            on(a, 5, "attention_with_fused_qkv(cache, layer_id, sm_scale, qkv_data, o_data)", |s, a| {
                s.fused_qkv(a.int(1)?, &a.ndarray(3)?, &a.ndarray(4)?, a.float(2)?).map(none)
            })
        }),
        f("vm.builtin.attention_kv_cache_attention_with_shared_kv", |a| {
            on(a, 7, "attention_with_shared_kv(cache, source_layer_id, sm_scale, q_data, current_k_data, current_v_data, o_data)", |s, a| {
                s.shared_kv(a.int(1)?, &a.ndarray(3)?, &a.ndarray(4)?, &a.ndarray(5)?, &a.ndarray(6)?, a.float(2)?).map(none)
            })
        }),
        f("vm.builtin.attention_kv_cache_self_attention", |a| {
            on(
                a,
                8,
                "self_attention(cache, layer_id, sm_scale, q_data, k_data, v_data, o_data, lse_data)",
                self_attention,
            )
        }),
        f("vm.builtin.attention_kv_cache_cross_attention", |a| {
            on(a, 6, "cross_attention(cache, layer_id, sm_scale, q_data, o_data, lse_data)", cross_attention)
        }),
        f("vm.builtin.attention_kv_cache_merge_attn_output_inplace", merge_global),
        f("vm.builtin.attention_kv_cache_commit_accepted_token_tree_nodes", |a| {
            on(a, 3, "commit_accepted_token_tree_nodes(cache, seq_ids, leaf_indices)", |s, a| {
                s.commit(&super::super::args::shape_arg(a, 1)?, &super::super::args::shape_arg(a, 2)?).map(none)
            })
        }),
        f("vm.builtin.attention_kv_cache_enable_sliding_window_for_seq", |a| {
            on(a, 4, "enable_sliding_window_for_seq(cache, seq_id, sliding_window_size, attn_sink_size)", |s, a| {
                if !s.cfg.sliding && s.cfg.layer_window.is_none() {
                    return fail("The KV cache does not support sliding window.");
                }
                let (window, sink) = (i32_arg(a, 2)?, i32_arg(a, 3)?);
                s.changed(|p| p.enable_sliding_window(a.int(1)?, window, sink)).map(none)
            })
        }),
        f("vm.builtin.attention_kv_cache_empty", |a| on(a, 1, "empty(cache)", |s, _| Ok(Value::Bool(s.pool.empty())))),
        f("vm.builtin.attention_kv_cache_get_num_available_pages", |a| {
            on(a, 1, "get_num_available_pages(cache)", |s, _| Ok(Value::Int(s.pool.available_pages() as i64)))
        }),
        f("vm.builtin.attention_kv_cache_get_total_sequence_length", |a| {
            on(a, 1, "get_total_sequence_length(cache)", |s, _| Ok(Value::Int(s.pool.total_length())))
        }),
        f("vm.builtin.attention_kv_cache_get_sequence_length", |a| {
            on(a, 2, "get_sequence_length(cache, seq_id)", |s, a| {
                Ok(Value::Int(s.pool.seq(a.int(1)?)?.seq_length as i64))
            })
        }),
        f("vm.builtin.attention_kv_cache_get_query_positions", |a| {
            on(a, 1, "get_query_positions(cache)", |s, _| {
                s.sync_views()?;
                Ok(nd(&s.synced().q_rope_position))
            })
        }),
        f("vm.builtin.attention_kv_cache_debug_get_kv", |a| {
            on(a, 6, "debug_get_kv(cache, seq_id, start_pos, end_pos, k_data, v_data)", |s, a| {
                s.debug_get_kv(a.int(1)?, a.int(2)?, a.int(3)?, &a.ndarray(4)?, &a.ndarray(5)?).map(none)
            })
        }),
        f("vm.builtin.attention_kv_cache_debug_get_kv_mla", |_| {
            fail("multi-head latent attention (MLA) is not supported by this runtime")
        }),
        f("vm.builtin.attention_kv_cache_append_mla_kv", |_| {
            fail("multi-head latent attention (MLA) is not supported by this runtime")
        }),
        f("vm.builtin.kv_cache_disagg_prepare_recv", |a| {
            on(a, 3, "kv_cache_disagg_prepare_recv(cache, seq_id, append_length)", |s, a| {
                s.prepare_recv(a.int(1)?, a.int(2)?)
            })
        }),
        f("vm.builtin.kv_cache_disagg_mark_send", |_| {
            fail("KV transfer between processes needs NVSHMEM, which this runtime does not have")
        }),
    ]
}

fn none(_: ()) -> Value {
    Value::Null
}

fn i32_arg(a: &Args<'_>, i: usize) -> Result<i32> {
    let v = a.int(i)?;
    i32::try_from(v).map_err(|_| Error::value(format!("argument {i}: {v} does not fit in int32")))
}

/// `body` on the cache in argument 0 of `n` arguments (`usage` names them).
fn on(
    args: Args<'_>,
    n: usize,
    usage: &str,
    body: impl FnOnce(&mut State, &Args<'_>) -> Result<Value>,
) -> Result<Value> {
    if args.len() != n {
        args.expect_len(n, &format!("vm.builtin.attention_kv_cache_{usage}"))?;
    }
    cache_arg(&args, 0)?.with(|s| body(s, &args))
}

fn self_attention(s: &mut State, a: &Args<'_>) -> Result<Value> {
    let local = s.local_layer(a.int(1)?)?;
    let [q, k, v, o, lse] = [3, 4, 5, 6, 7].map(|i| a.ndarray(i));
    let (q, k, v, o, lse) = (q?, k?, v?, o?, lse?);
    let n = s.total_length();
    for (what, t) in [("q_data", &q), ("k_data", &k), ("v_data", &v), ("o_data", &o)] {
        s.check_dtype(what, t)?;
        if t.shape().len() != 3 || t.shape()[0] != n {
            return fail(format!("{what}: shape {:?}, expected ({n}, heads, dim)", t.shape()));
        }
    }
    debug_assert!(matches!(s.kind(local), AttnKind::Mha | AttnKind::MhaSliding));
    s.sync_views()?;
    s.self_attend(s.synced(), &q, &k, &v, &o, &lse, a.float(2)?).map(|_| Value::Null)
}

fn cross_attention(s: &mut State, a: &Args<'_>) -> Result<Value> {
    let local = s.local_layer(a.int(1)?)?;
    let (q, o, lse) = (a.ndarray(3)?, a.ndarray(4)?, a.ndarray(5)?);
    let (n, c) = (s.total_length(), &s.cfg);
    let (qs, os) = ([n, c.num_qo_heads, c.head_dim], [n, c.num_qo_heads, c.v_head_dim]);
    s.check_dtype("q_data", &q)?;
    s.check_dtype("o_data", &o)?;
    s.check_shape("q_data", &q, &qs)?;
    s.check_shape("o_data", &o, &os)?;
    s.sync_views()?;
    s.cross_attend(s.synced(), local, &q, &o, &lse, a.float(2)?, true, false).map(|_| Value::Null)
}

fn merge_global(a: Args<'_>) -> Result<Value> {
    on(a, 5, "merge_attn_output_inplace(cache, o_self_attn, lse_self_attn, o_cross_attn, lse_cross_attn)", |s, a| {
        let merge = s
            .kernels
            .merge
            .get(1)
            .ok_or_else(|| Error::internal("The general attention merge function is not defined."))?;
        let ts = [1, 2, 3, 4].map(|i| a.ndarray(i));
        let [o1, l1, o2, l2] = ts;
        let (o1, l1) = (o1?, l1?);
        let (o2, l2) = (o2?, l2?);
        launch(merge, &[K::T(&o1), K::T(&l1), K::T(&o2), K::T(&l2)])?;
        let items = vec![o1.to_object_ref(), l1.to_object_ref()];
        Ok(Value::Object(crate::runtime::container::array_object(items)))
    })
}

impl State {
    /// Keeps, of each sequence's last token tree, the path to its accepted leaf (-1: none):
    /// the path's keys and values move to the front of the tree's slots, the rest is popped.
    fn commit(&mut self, ids: &[i64], leaves: &[i64]) -> Result<()> {
        if ids.len() != leaves.len() {
            return fail("The given seq_ids and leaf_indices have different size.");
        }
        let mut is_chain = true;
        for (&id, &leaf) in ids.iter().zip(leaves) {
            let seq = self.pool.seq(id)?;
            is_chain = seq.is_chain;
            if leaf != -1 && seq.committed {
                return fail(format!("The accepted nodes of sequence {id} are already committed."));
            }
            if leaf < -1 || leaf >= seq.tree_parents.len() as i64 {
                return fail(format!(
                    "Invalid tree index {leaf}: the sequence's token tree has {} nodes",
                    seq.tree_parents.len()
                ));
            }
        }
        if !is_chain {
            self.compact(ids, leaves)?;
        }
        for (i, (&id, &leaf)) in ids.iter().zip(leaves).enumerate() {
            let seq = self.pool.seq(id)?;
            let kept = if leaf == -1 { 0 } else { seq.tree_depths[leaf as usize] as i64 + 1 };
            let n = self.batch.append_lengths.get(i).copied().unwrap_or(0) - kept;
            let pop = self.batch.seq_ids.get(i).copied().unwrap_or(id);
            self.with_page_copies(|p, copy| p.popn(pop, n, copy))?;
            let seq = self.pool.seq_mut(id)?;
            seq.committed = true;
            seq.tree_parents.clear();
            seq.tree_depths.clear();
        }
        Ok(())
    }

    /// Moves the accepted paths' keys and values into place (the model's compact-copy kernel).
    fn compact(&mut self, ids: &[i64], leaves: &[i64]) -> Result<()> {
        let (mut indptr, mut src, mut dst) = (vec![0i32], Vec::new(), Vec::new());
        for (i, (&id, &leaf)) in ids.iter().zip(leaves).enumerate() {
            if leaf != -1 {
                let seq = self.pool.seq(id)?;
                let mut path = Vec::new();
                let mut node = leaf as i32;
                while node != -1 {
                    path.push(node);
                    node = seq.tree_parents[node as usize];
                }
                path.reverse();
                let base =
                    *self.batch.append_indptr.get(i).ok_or_else(|| Error::internal("no batch to commit"))? as usize;
                let slot = |k: i32| {
                    self.batch
                        .append_position_map
                        .get(base + k as usize)
                        .copied()
                        .ok_or_else(|| Error::internal("tree node outside the batch"))
                };
                for (to, &from) in path.iter().enumerate() {
                    if from != to as i32 {
                        src.push(slot(from)?);
                        dst.push(slot(to as i32)?);
                    }
                }
            }
            indptr.push(src.len() as i32);
        }
        if src.is_empty() {
            return Ok(());
        }
        self.aux.reset();
        let staged = (self.aux.put(&indptr, None), self.aux.put_rows(&[&src, &dst]));
        self.aux.commit()?;
        self.views = None;
        let (ind, pos) = (self.aux.view(&staged.0)?, self.aux.view(&staged.1)?);
        let batch = self.batch.seq_ids.len() as i64;
        for layer in &self.buffers.pages {
            launch(&self.kernels.compact_copy, &[K::T(layer), K::T(&ind), K::T(&pos), K::I(batch)])?;
        }
        Ok(())
    }

    /// Tokens `start..end` of a sequence's keys and values, every layer, into `k` and `v`
    /// (layers, tokens, kv heads, dim).
    fn debug_get_kv(&mut self, id: i64, start: i64, end: i64, k: &NDArray, v: &NDArray) -> Result<()> {
        let seq = self.pool.seq(id)?.clone();
        if start < 0 {
            return fail(format!("DebugGetKV does not accept negative start_pos {start}"));
        }
        if end > seq.seq_length as i64 {
            return fail("DebugGetKV does not accept out-of-range end_pos");
        }
        if start >= end {
            return fail("DebugGetKV does not accept \"start_pos >= end_pos\"");
        }
        let c = &self.cfg;
        let want = [c.num_layers, end - start, c.num_kv_heads, c.head_dim];
        for (what, t) in [("k_data", k), ("v_data", v)] {
            if t.shape() != want {
                return fail(format!("DebugGetKV expects the {what} in layout (num_layers, seq_length, num_kv_heads, qk_head_dim) {want:?}, got {:?}", t.shape()));
            }
        }
        let slots = self.pool.slots(&seq);
        let map = NDArray::empty(&[end - start], crate::abi::DLDataType::INT32, c.device)?;
        let bytes: Vec<u8> = slots[start as usize..end as usize].iter().flat_map(|s| s.to_ne_bytes()).collect();
        map.copy_from_bytes(&bytes)?;
        for (layer, pages) in self.buffers.pages.iter().enumerate() {
            if self.kind(layer) != AttnKind::Mha {
                return fail("Only MHA is supported for DebugGetKV");
            }
            launch(&self.kernels.debug_get_kv, &[K::T(pages), K::T(&map), K::T(k), K::T(v), K::I(layer as i64)])?;
        }
        Ok(())
    }

    /// Begins a pass of one sequence and returns where its tokens go, compressed as
    /// `[segments, begin, length, ...]` (a receiver's half of KV transfer).
    fn prepare_recv(&mut self, id: i64, n: i64) -> Result<Value> {
        self.begin_forward(&[id], &[n], None)?;
        let map = &self.batch.append_position_map;
        let mut out = vec![1i64, *map.first().ok_or_else(|| Error::internal("nothing to receive"))? as i64];
        for w in map.windows(2) {
            if w[1] != w[0] + 1 {
                out.push(w[0] as i64 - out.last().unwrap() + 1);
                out[0] += 1;
                out.push(w[1] as i64);
            }
        }
        out.push(*map.last().unwrap() as i64 - out.last().unwrap() + 1);
        Ok(Value::Object(crate::runtime::tensor::ndarray::shape_tuple(&out).to_object_ref()))
    }
}

#[cfg(test)]
mod tests {
    use crate::abi::{DLDataType, DLDevice};
    use crate::runtime::container::{array_object, string_object};
    use crate::runtime::function::packed::{PackedFunc, Value};
    use crate::runtime::tensor::ndarray::{shape_tuple, NDArray};

    fn global(name: &str) -> PackedFunc {
        let all = super::super::globals()
            .into_iter()
            .chain(super::super::super::kv_state::globals(&[super::super::as_kv_state]));
        all.into_iter().find(|(n, _)| *n == name).map(|(_, f)| f).unwrap_or_else(|| panic!("{name}"))
    }

    fn shape(d: &[i64]) -> Value {
        Value::Object(shape_tuple(d).to_object_ref())
    }

    /// A kernel that must not run: the calls below fail before any kernel would.
    fn never() -> PackedFunc {
        PackedFunc::from_typed(|_| panic!("a kernel ran"))
    }

    fn tirx() -> Value {
        Value::Object(array_object(vec![string_object("tirx"), never().to_object_ref()]))
    }

    /// apache-tvm 0.27's 28 creation arguments, with `config` and kernels that must not run.
    fn create_args(config: &[i64], backend: Value) -> Vec<Value> {
        let init = NDArray::empty(&[], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        let mut a = vec![shape(config), shape(&[0, 2]), Value::Int(4), Value::Int(2), Value::Int(8), Value::Int(8)];
        a.extend([shape(&[0, 0]), Value::Int(0), Value::Int(1), Value::Float(1.0), Value::Float(1e4), Value::Null]);
        a.extend([Value::NDArray(init), Value::Func(never()), Value::Null, backend]);
        a.extend((16..=21).map(|_| tirx()));
        a.push(Value::Object(array_object(vec![])));
        a.push(Value::Object(array_object(vec![never().to_object_ref()])));
        a.extend((24..=27).map(|_| Value::Func(never())));
        a
    }

    fn error_of(name: &str, args: &[Value]) -> String {
        global(name).call(args).expect_err(name).to_string()
    }

    #[test]
    fn bad_calls_are_errors_naming_what_is_wrong() {
        let create = "vm.builtin.paged_attention_kv_cache_create";
        let e = error_of(create, &create_args(&[4, 256, 64, 0, 0], tirx()));
        assert!(e.contains("page_size (cache_config[3]) must be positive"), "{e}");
        let flashinfer = Value::Object(array_object(vec![
            string_object("flashinfer"),
            never().to_object_ref(),
            never().to_object_ref(),
        ]));
        assert!(error_of(create, &create_args(&[4, 256, 64, 16, 0], flashinfer)).contains("FlashInfer"));
        assert!(error_of(create, &create_args(&[4, 256, 64, 16, 0], tirx())[..27])
            .contains("Invalid number of KV cache constructor args: 27"));
        let cache = global(create).call(&create_args(&[4, 256, 64, 16, 0], tirx())).unwrap();
        let call = |name: &str, rest: &[Value]| {
            let args: Vec<Value> = std::iter::once(cache.clone()).chain(rest.iter().cloned()).collect();
            global(name).call(&args)
        };
        let err = |name: &str, rest: &[Value]| call(name, rest).expect_err(name).to_string();
        assert!(err("vm.builtin.kv_state_begin_forward", &[shape(&[7]), shape(&[3])]).contains("\"7\" cannot be found"));
        call("vm.builtin.kv_state_add_sequence", &[Value::Int(0)]).unwrap();
        assert!(err("vm.builtin.kv_state_add_sequence", &[Value::Int(0)]).contains("already in the KV cache"));
        assert!(
            err("vm.builtin.kv_state_begin_forward", &[shape(&[0]), shape(&[0])]).contains("length 0 is not allowed")
        );
        assert!(err("vm.builtin.kv_state_begin_forward", &[shape(&[0, 0]), shape(&[1, 1])]).contains("appears twice"));
        assert!(
            err("vm.builtin.kv_state_begin_forward", &[shape(&[0]), shape(&[65])]).contains("prefill chunk size 64")
        );
        let qkv = NDArray::empty(&[3, 8, 8], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        let o = NDArray::empty(&[3, 4, 8], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        let fused = "vm.builtin.attention_kv_cache_attention_with_fused_qkv";
        let attend = [Value::Int(0), Value::Float(0.3), Value::NDArray(qkv.clone()), Value::NDArray(o.clone())];
        assert!(err(fused, &attend).contains("no forward pass has begun"));
        call("vm.builtin.kv_state_begin_forward", &[shape(&[0]), shape(&[4])]).unwrap();
        assert!(err(fused, &attend).contains("qkv_data: shape [3, 8, 8], expected (4 or more, 8, 8)"));
        let layer9 = [Value::Int(9), Value::Float(0.3), Value::NDArray(qkv), Value::NDArray(o)];
        assert!(err(fused, &layer9).contains("layer 9 is not one of this cache's layers 0..2"));
        assert!(err("vm.builtin.kv_state_popn", &[Value::Int(0), Value::Int(5)])
            .contains("exceeds the whole sequence length"));
        assert!(err("vm.builtin.kv_state_fork_sequence", &[Value::Int(3), Value::Int(1), Value::Int(-1)])
            .contains("parent sequence \"3\""));
        let k = NDArray::empty(&[2, 9, 2, 8], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        let debug = [Value::Int(0), Value::Int(0), Value::Int(9), Value::NDArray(k.clone()), Value::NDArray(k)];
        assert!(err("vm.builtin.attention_kv_cache_debug_get_kv", &debug).contains("out-of-range end_pos"));
        assert!(err(
            "vm.builtin.attention_kv_cache_enable_sliding_window_for_seq",
            &[Value::Int(0), Value::Int(8), Value::Int(2)]
        )
        .contains("does not support sliding window"));
        // After all that, the cache is as the calls that succeeded left it.
        let length = call("vm.builtin.attention_kv_cache_get_total_sequence_length", &[]).unwrap();
        assert_eq!(length.as_int().unwrap(), 4);
        let length = call("vm.builtin.attention_kv_cache_get_sequence_length", &[Value::Int(0)]).unwrap();
        assert_eq!(length.as_int().unwrap(), 4);
        assert!(err("vm.builtin.attention_kv_cache_get_sequence_length", &[Value::Int(5)])
            .contains("\"5\" cannot be found"));
        call("vm.builtin.kv_state_remove_sequence", &[Value::Int(0)]).unwrap();
        assert!(matches!(call("vm.builtin.attention_kv_cache_empty", &[]).unwrap(), Value::Bool(true)));
    }
}
