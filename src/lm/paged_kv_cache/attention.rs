//! Attention over the cache, by the model's kernels: the batch's arrays copied to the device
//! ([`Views`]), then per layer the new tokens' queries against their own keys (a ragged
//! prefill, or the tree kernel for token trees) and against each depth of cached pages (a
//! prefill or decode kernel), partial results merged by their log-sum-exp. The `attention_kv_
//! cache_*` builtins on the paged cache, with apache-tvm's names and argument orders.

use super::batch::Batch;
use super::{AttnKind, RopeMode, State};
use crate::abi::DLDataType;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::tensor::ndarray::NDArray;

/// The batch's arrays on the device, per depth where they are.
pub(super) struct Views {
    pub q_rope_position: NDArray,
    qo_indptr: Vec<NDArray>,
    page_indptr: Vec<NDArray>,
    page_indices: Vec<NDArray>,
    page_indptr_sw: Vec<Option<NDArray>>,
    page_indices_sw: Vec<Option<NDArray>>,
    length_info: Vec<NDArray>,
    layer_length_info: Vec<Option<NDArray>>,
    k_rope_pos_offset: Vec<NDArray>,
    k_rope_pos_offset_sw: Vec<Option<NDArray>>,
    tree_mask: Vec<Option<NDArray>>,
    tree_mn_indptr: Vec<Option<NDArray>>,
    append_indptr: NDArray,
    k_ragged_rope_pos_offset: NDArray,
    append_position: NDArray,
    output: NDArray,
    lse: NDArray,
    merged_lse: NDArray,
}

pub(super) fn fail<T>(message: impl std::fmt::Display) -> Result<T> {
    Err(Error::internal(message))
}

pub(super) fn nd(t: &NDArray) -> Value {
    Value::NDArray(t.clone())
}

/// An argument of a kernel call: borrowed for the call, as tvm-ffi passes arguments.
pub(super) enum K<'a> {
    T(&'a NDArray),
    I(i64),
    F(f64),
}

/// Calls a model's kernel in tvm-ffi's convention with views of `args` (no conversion, no
/// reference counts: a decode step makes a few dozen of these calls).
pub(super) fn launch(f: &PackedFunc, args: &[K<'_>]) -> Result<()> {
    use crate::abi::{ffi_type_index as fti, TVMFFIAny};
    let mut anys = [TVMFFIAny::NONE; 16];
    if args.len() > anys.len() {
        return fail(format!("a kernel call of {} arguments", args.len()));
    }
    for (a, k) in anys.iter_mut().zip(args) {
        *a = match k {
            K::T(t) => t.as_any_view(),
            K::I(v) => TVMFFIAny::int(fti::INT, *v),
            K::F(v) => TVMFFIAny::float(*v),
        };
    }
    let out = f.call_any(&anys[..args.len()])?;
    // SAFETY: the callee's owned result (None for a kernel), given back here.
    drop(unsafe { Value::adopt_any(out) });
    Ok(())
}

impl State {
    /// Copies the arrays of the batch begun last to the device if they are stale.
    pub(super) fn sync_views(&mut self) -> Result<()> {
        if self.views.is_none() {
            if self.batch.seq_ids.is_empty() {
                return fail("no forward pass has begun: call kv_state_begin_forward first");
            }
            self.views = Some(self.sync()?);
        }
        Ok(())
    }

    /// The device arrays (after [`State::sync_views`]).
    pub(super) fn synced(&self) -> &Views {
        self.views.as_ref().expect("synchronized by sync_views")
    }

    fn sync(&mut self) -> Result<Views> {
        let (b, aux, cfg) = (&self.batch, &mut self.aux, &self.cfg);
        let nd_ = b.num_depths;
        aux.reset();
        // First, at offset 0: the rotary kernel's buffer declares no element offset.
        let q_rope = aux.put(&b.q_rope_position_map, None);
        let per = |aux: &mut super::aux::Aux, f: &dyn Fn(&super::batch::Depth) -> &Vec<i32>| -> Vec<_> {
            b.depths[..nd_].iter().map(|d| aux.put(f(d), None)).collect()
        };
        let qo = per(aux, &|d| &d.qo_indptr);
        let pi = per(aux, &|d| &d.page_indptr);
        let px = per(aux, &|d| &d.page_indices);
        let layer = cfg.layer_window.is_some();
        let (pi_sw, px_sw) = if layer {
            (per(aux, &|d| &d.page_indptr_sw), per(aux, &|d| &d.page_indices_sw))
        } else {
            (vec![], vec![])
        };
        let mut info = Vec::new();
        let mut layer_info = Vec::new();
        for d in &b.depths[..nd_] {
            let rows = [&d.last_page_len[..], &d.sliding_window_offset[..], &d.sink_size[..]];
            info.push(if cfg.sliding { aux.put_rows(&rows) } else { aux.put(&d.last_page_len, None) });
            if layer {
                layer_info.push(aux.put_rows(&rows));
            }
        }
        let mut k_rope = Vec::new();
        let mut k_rope_sw = Vec::new();
        for d in &b.depths[..nd_] {
            k_rope.push(aux.put(&d.k_rope_pos_offset, None));
            if layer {
                k_rope_sw.push(aux.put(&d.k_rope_pos_offset_sw, None));
            }
        }
        let append_indptr = aux.put(&b.append_indptr, None);
        let k_ragged = aux.put(&b.k_ragged_rope_pos_offset, None);
        let append_position = aux.put(&b.append_position_map, None);
        let mut trees = Vec::new();
        for (d, depth) in b.depths[..nd_].iter().enumerate() {
            trees.push((!b.is_chain[d]).then(|| {
                let n = depth.tree_mask.len() as i64 / 2;
                (aux.put(&depth.tree_mask, Some([n, 2])), aux.put(&depth.tree_mn_indptr, None))
            }));
        }
        aux.commit()?;
        let some = |aux: &mut super::aux::Aux, s: &[super::aux::Staged]| -> Result<Vec<Option<NDArray>>> {
            (0..nd_).map(|d| s.get(d).map(|s| aux.view(s)).transpose()).collect()
        };
        let (tree_mask, tree_mn_indptr) = {
            let mut masks = Vec::new();
            let mut indptrs = Vec::new();
            for t in &trees {
                masks.push(t.as_ref().map(|t| aux.view(&t.0)).transpose()?);
                indptrs.push(t.as_ref().map(|t| aux.view(&t.1)).transpose()?);
            }
            (masks, indptrs)
        };
        let total = *b.append_indptr.last().unwrap_or(&0) as i64;
        let buf = &self.buffers;
        Ok(Views {
            q_rope_position: aux.view(&q_rope)?,
            qo_indptr: aux.views(&qo)?,
            page_indptr: aux.views(&pi)?,
            page_indices: aux.views(&px)?,
            page_indptr_sw: some(aux, &pi_sw)?,
            page_indices_sw: some(aux, &px_sw)?,
            length_info: aux.views(&info)?,
            layer_length_info: some(aux, &layer_info)?,
            k_rope_pos_offset: aux.views(&k_rope)?,
            k_rope_pos_offset_sw: some(aux, &k_rope_sw)?,
            tree_mask,
            tree_mn_indptr,
            append_indptr: aux.view(&append_indptr)?,
            k_ragged_rope_pos_offset: aux.view(&k_ragged)?,
            append_position: aux.view(&append_position)?,
            output: buf.output.create_view(&[total, cfg.num_qo_heads, cfg.v_head_dim], cfg.dtype)?,
            lse: buf.lse.create_view(&[total, cfg.num_qo_heads], DLDataType::FLOAT32)?,
            merged_lse: buf.merged_lse.create_view(&[total, cfg.num_qo_heads], DLDataType::FLOAT32)?,
        })
    }

    /// Views of the scratch buffers the fused QKV of `n` tokens is split into (kept for the
    /// next call of the same size).
    fn split_views(&mut self, n: i64) -> Result<[NDArray; 3]> {
        if let Some((at, views)) = &self.buffers.split {
            if *at == n {
                return Ok(views.clone());
            }
        }
        let (c, b) = (&self.cfg, &self.buffers);
        let views = [
            b.q.create_view(&[n, c.num_qo_heads, c.head_dim], c.dtype)?,
            b.k.create_view(&[n, c.num_kv_heads, c.head_dim], c.dtype)?,
            b.v.create_view(&[n, c.num_kv_heads, c.head_dim], c.dtype)?,
        ];
        self.buffers.split = Some((n, views.clone()));
        Ok(views)
    }

    pub(super) fn total_length(&self) -> i64 {
        self.batch.append_lengths.iter().sum()
    }

    /// The index of global layer `layer` among this cache's layers.
    pub(super) fn local_layer(&self, layer: i64) -> Result<usize> {
        let local = layer - self.cfg.layer_begin;
        if local < 0 || local >= self.cfg.num_layers {
            return fail(format!(
                "layer {layer} is not one of this cache's layers {}..{}",
                self.cfg.layer_begin,
                self.cfg.layer_begin + self.cfg.num_layers
            ));
        }
        Ok(local as usize)
    }

    pub(super) fn kind(&self, local: usize) -> AttnKind {
        self.cfg.attn_kinds[local + self.cfg.layer_begin as usize]
    }

    pub(super) fn check_dtype(&self, what: &str, t: &NDArray) -> Result<()> {
        if t.dtype() != self.cfg.dtype {
            return Err(Error::type_error(format!(
                "{what}: dtype {} where the cache holds {}",
                t.dtype(),
                self.cfg.dtype
            )));
        }
        Ok(())
    }

    pub(super) fn check_shape(&self, what: &str, t: &NDArray, want: &[i64]) -> Result<()> {
        if t.shape() != want {
            return fail(format!("{what}: shape {:?}, expected {want:?}", t.shape()));
        }
        Ok(())
    }

    /// `attention_with_fused_qkv`: splits `qkv` (tokens, qo + 2 kv heads, dim), rotates, stores
    /// the new keys and values and attends; the result into `o` (tokens, qo heads, dim).
    pub(super) fn fused_qkv(&mut self, layer: i64, qkv: &NDArray, o: &NDArray, sm_scale: f64) -> Result<()> {
        let local = self.local_layer(layer)?;
        self.check_dtype("qkv_data", qkv)?;
        self.check_dtype("o_data", o)?;
        let c = &self.cfg;
        let (heads, dim) = (c.num_qo_heads + 2 * c.num_kv_heads, c.head_dim);
        let n = self.total_length();
        let tokens = qkv.shape().first().copied().unwrap_or(-1);
        if qkv.shape().len() != 3 || qkv.shape()[1..] != [heads, dim] || tokens < n {
            return fail(format!("qkv_data: shape {:?}, expected ({n} or more, {heads}, {dim})", qkv.shape()));
        }
        self.check_shape("o_data", o, &[tokens, c.num_qo_heads, dim])?;
        let (qkv, o) = if tokens != n {
            (qkv.create_view(&[n, heads, dim], qkv.dtype())?, o.create_view(&[n, c.num_qo_heads, dim], o.dtype())?)
        } else {
            (qkv.clone(), o.clone())
        };
        let [q, k, v] = self.split_views(n)?;
        self.sync_views()?;
        let (views, c) = (self.synced(), &self.cfg);
        let rope = match &c.rope_ext_factors {
            Some(t) => K::T(t),
            None => K::I((c.rope_mode == RopeMode::Normal) as i64),
        };
        launch(
            &self.kernels.split_rotary,
            &[K::T(&qkv), K::T(&views.q_rope_position), K::T(&q), K::T(&k), K::T(&v), rope],
        )?;
        let append = kernel(&self.kernels.transpose_append, "f_transpose_append_mha")?;
        let store =
            || launch(append, &[K::T(&self.buffers.pages[local]), K::T(&k), K::T(&v), K::T(&views.append_position)]);
        if self.batch.append_before_attn {
            store()?;
        }
        self.attend(views, local, &q, &k, &v, &o, sm_scale)?;
        if !self.batch.append_before_attn {
            store()?;
        }
        Ok(())
    }

    /// The new tokens against themselves (unless their keys are already stored) and against
    /// the cached pages.
    #[allow(clippy::too_many_arguments)]
    fn attend(
        &self,
        views: &Views,
        local: usize,
        q: &NDArray,
        k: &NDArray,
        v: &NDArray,
        o: &NDArray,
        sm_scale: f64,
    ) -> Result<()> {
        let before = self.batch.append_before_attn;
        if !before {
            self.self_attend(views, q, k, v, o, &views.merged_lse, sm_scale)?;
        }
        let causal = !before && self.kind(local) == AttnKind::MhaSliding;
        let crossed = self.cross_attend(views, local, q, o, &views.merged_lse, sm_scale, before, causal)?;
        if before && !crossed {
            return fail("Both self-attention and cross-attention are not computed.");
        }
        Ok(())
    }

    /// The kernels' rotary arguments: inline or not, scale, theta.
    fn rotary(&self) -> [K<'static>; 3] {
        let c = &self.cfg;
        [K::I((c.rope_mode == RopeMode::Inline) as i64), K::F(c.rotary_scale), K::F(c.rotary_theta)]
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn self_attend(
        &self,
        views: &Views,
        q: &NDArray,
        k: &NDArray,
        v: &NDArray,
        o: &NDArray,
        lse: &NDArray,
        sm_scale: f64,
    ) -> Result<()> {
        let [mode, scale, theta] = self.rotary();
        let (ind, qpos) = (K::T(&views.append_indptr), K::T(&views.q_rope_position));
        // Ragged prefill: (q, qo_indptr, k, v, kv_indptr, q_rope_position, k_rope_pos_offset,
        // o, lse, causal, rope...); with a tree mask: the mask's indptr and mask in place of
        // the key offsets, and no causal flag.
        let mut args = vec![K::T(q), ind, K::T(k), K::T(v), K::T(&views.append_indptr), qpos];
        let f = if self.batch.is_chain[0] {
            args.extend([K::T(&views.k_ragged_rope_pos_offset), K::T(o), K::T(lse), K::I(1)]);
            kernel(&self.kernels.prefill_ragged, "f_attention_prefill_ragged")?
        } else {
            let (mask, mn) = tree_views(views, 0)?;
            args.extend([K::T(mn), K::T(mask), K::T(o), K::T(lse)]);
            kernel(&self.kernels.tree_ragged, "f_attention_prefill_with_tree_mask")?
        };
        args.extend([mode, scale, theta, K::F(sm_scale)]);
        launch(f, &args)
    }

    /// The queries against each depth of cached pages; whether any depth had pages.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cross_attend<'a>(
        &self,
        views: &'a Views,
        local: usize,
        q: &NDArray,
        o: &NDArray,
        lse: &NDArray,
        sm_scale: f64,
        mut first: bool,
        causal: bool,
    ) -> Result<bool> {
        let b: &Batch = &self.batch;
        let sliding_layer = self.kind(local) == AttnKind::MhaSliding;
        let windowed = self.cfg.sliding || sliding_layer;
        let (prefill, decode) = if windowed {
            (&self.kernels.prefill_sliding, &self.kernels.decode_sliding)
        } else {
            (&self.kernels.prefill, &self.kernels.decode)
        };
        let pages = &self.buffers.pages[local];
        let mut computed = false;
        for d in 0..b.num_depths {
            if views.page_indices[d].shape()[0] == 0 {
                continue;
            }
            let (out, out_lse) = if first { (o, lse) } else { (&views.output, &views.lse) };
            let [mode, mut scale, mut theta] = self.rotary();
            let (indptr, indices, info, k_rope) = if sliding_layer {
                (scale, theta) = (K::F(1.0), K::F(10000.0));
                let get =
                    |v: &'a Option<NDArray>| v.as_ref().ok_or_else(|| Error::internal("no sliding-window arrays"));
                (
                    get(&views.page_indptr_sw[d])?,
                    get(&views.page_indices_sw[d])?,
                    get(&views.layer_length_info[d])?,
                    get(&views.k_rope_pos_offset_sw[d])?,
                )
            } else {
                (&views.page_indptr[d], &views.page_indices[d], &views.length_info[d], &views.k_rope_pos_offset[d])
            };
            let (indptr, indices, info, k_rope) = (K::T(indptr), K::T(indices), K::T(info), K::T(k_rope));
            let (qv, qpos, sm, qo) = (K::T(q), K::T(&views.q_rope_position), K::F(sm_scale), K::T(&views.qo_indptr[d]));
            let (ov, lv, pg) = (K::T(out), K::T(out_lse), K::T(pages));
            if b.append_before_attn && !b.is_chain[d] {
                let f = kernel(&self.kernels.tree_paged, "f_attention_prefill_with_tree_mask_paged_kv")?;
                let (mask, mn) = tree_views(views, d)?;
                let (mn, mask) = (K::T(mn), K::T(mask));
                launch(
                    f,
                    &[qv, qo, pg, indptr, indices, info, k_rope, qpos, ov, lv, mode, scale, theta, sm, mn, mask],
                )?;
            } else if b.use_decode_kernel[d] {
                let f = kernel(decode, "f_attention_decode")?;
                launch(f, &[qv, pg, indptr, indices, info, k_rope, qpos, ov, lv, mode, scale, theta, sm])?;
            } else {
                let f = kernel(prefill, "f_attention_prefill")?;
                let causal = K::I(causal as i64);
                launch(f, &[qv, qo, pg, indptr, indices, info, k_rope, qpos, ov, lv, causal, mode, scale, theta, sm])?;
            }
            if first {
                first = false;
            } else {
                let merge = [K::T(o), K::T(lse), K::T(&views.output), K::T(&views.lse)];
                launch(&self.kernels.merge[0], &merge)?;
            }
            computed = true;
        }
        Ok(computed)
    }
}

fn kernel<'a>(f: &'a Option<PackedFunc>, name: &str) -> Result<&'a PackedFunc> {
    f.as_ref().ok_or_else(|| Error::internal(format!("Function \"{name}\" is not defined.")))
}

fn tree_views(views: &Views, d: usize) -> Result<(&NDArray, &NDArray)> {
    match (&views.tree_mask[d], &views.tree_mn_indptr[d]) {
        (Some(mask), Some(mn)) => Ok((mask, mn)),
        _ => fail(format!("no token tree mask at depth {d}")),
    }
}

impl State {
    /// `attention_with_shared_kv`: other queries against `source` layer's cache and the current
    /// keys and values (stored already by that layer's fused call).
    pub(super) fn shared_kv(
        &mut self,
        source: i64,
        q: &NDArray,
        k: &NDArray,
        v: &NDArray,
        o: &NDArray,
        sm_scale: f64,
    ) -> Result<()> {
        let local = self.local_layer(source)?;
        let c = &self.cfg;
        let n = self.total_length();
        for (what, t, heads, dim) in [
            ("q_data", q, c.num_qo_heads, c.head_dim),
            ("current_k_data", k, c.num_kv_heads, c.head_dim),
            ("current_v_data", v, c.num_kv_heads, c.v_head_dim),
            ("o_data", o, c.num_qo_heads, c.v_head_dim),
        ] {
            self.check_dtype(what, t)?;
            self.check_shape(what, t, &[n, heads, dim])?;
        }
        self.sync_views()?;
        self.attend(self.synced(), local, q, k, v, o, sm_scale)
    }
}
