//! The paged KV cache of language models compiled by TVM (`relax.vm.PagedAttentionKVCache`, a
//! `relax.vm.AttentionKVCache` and so a `relax.vm.KVState`): the keys and values of many
//! sequences in fixed pages allocated once at creation, on the model's device; sequences added,
//! removed, forked (sharing whole pages), popped and slid ([`blocks`]); each forward pass's
//! page tables and positions ([`batch`]) copied to the device in one transfer ([`aux`]); and
//! attention computed by the model's own kernels, handed to the cache at creation
//! ([`attention`]), called by apache-tvm's names ([`builtins`]). The cache calls the kernels; it
//! computes no attention itself.
//!
//! `vm.builtin.paged_attention_kv_cache_create` takes apache-tvm 0.27's 28 arguments in its
//! order. Kernels come as `["tirx", f]`; FlashInfer's (`["flashinfer", run, plan]`, CUDA), KV
//! transfer between processes (NVSHMEM) and multi-head latent attention layers are refused at
//! creation with an error saying so.

mod attention;
mod aux;
mod batch;
mod blocks;
mod builtins;

use crate::abi::{DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::header::{ObjPtr, ObjectRef, ObjectType};
use crate::runtime::object::type_table::{type_index as ti, type_key_of};
use crate::runtime::tensor::ndarray::NDArray;
use parking_lot::ReentrantMutex;
use std::cell::RefCell;

pub const ATTENTION_KV_CACHE_KEY: &str = "relax.vm.AttentionKVCache";
pub const TYPE_KEY: &str = "relax.vm.PagedAttentionKVCache";

/// How a layer attends (apache-tvm's `AttnKind` numbers).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum AttnKind {
    Mha = 0,
    MhaSliding = 3,
}

/// Where rotary position embeddings are applied: never, to keys before they are stored
/// (`Normal`), or inside the attention kernels (`Inline`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RopeMode {
    None = 0,
    Normal = 1,
    Inline = 2,
}

struct Config {
    page_size: i64,
    num_layers: i64,
    layer_begin: i64,
    num_qo_heads: i64,
    num_kv_heads: i64,
    head_dim: i64,
    v_head_dim: i64,
    prefill_chunk: i64,
    /// Sequences may slide (off when some layer slides by itself).
    sliding: bool,
    /// The window of `MHA_SLIDING` layers, when the cache has some.
    layer_window: Option<i64>,
    attn_kinds: Vec<AttnKind>,
    rope_mode: RopeMode,
    rotary_scale: f64,
    rotary_theta: f64,
    rope_ext_factors: Option<NDArray>,
    dtype: DLDataType,
    device: DLDevice,
}

/// The model's kernels (TVM's TIR functions, compiled into the model library).
struct Kernels {
    transpose_append: Option<PackedFunc>,
    prefill_ragged: Option<PackedFunc>,
    prefill: Option<PackedFunc>,
    decode: Option<PackedFunc>,
    prefill_sliding: Option<PackedFunc>,
    decode_sliding: Option<PackedFunc>,
    tree_paged: Option<PackedFunc>,
    tree_ragged: Option<PackedFunc>,
    merge: Vec<PackedFunc>,
    split_rotary: PackedFunc,
    copy_single_page: PackedFunc,
    debug_get_kv: PackedFunc,
    compact_copy: PackedFunc,
}

/// Device buffers allocated at creation.
struct Buffers {
    /// Per layer: (pages, 2, kv heads, page size, head dim), keys at 0 and values at 1.
    pages: Vec<NDArray>,
    q: NDArray,
    k: NDArray,
    v: NDArray,
    output: NDArray,
    lse: NDArray,
    merged_lse: NDArray,
    /// Views of `q`, `k`, `v` for the last call's number of tokens.
    split: Option<(i64, [NDArray; 3])>,
}

struct State {
    cfg: Config,
    kernels: Kernels,
    buffers: Buffers,
    pool: blocks::Pool,
    batch: batch::Batch,
    aux: aux::Aux,
    /// The batch's arrays on the device; `None` when they must be copied again.
    views: Option<attention::Views>,
}

/// The cache object. Calls from several threads take turns; a kernel that calls back into the
/// cache it was called from gets an error, not a deadlock.
pub struct PagedKvCacheObj(ReentrantMutex<RefCell<State>>);

impl ObjectType for PagedKvCacheObj {
    /// Made at [`TYPE_KEY`]'s index, read back through [`of_object`].
    const TYPE_INDEX: u32 = ti::ROOT;
}

fn type_index() -> Result<u32> {
    static INDEX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    super::kv_state::type_index(&INDEX, ATTENTION_KV_CACHE_KEY, TYPE_KEY)
}

/// `body` on the cache `o` is, if it is one made here; whether it is.
pub(in crate::lm) fn as_kv_state(
    o: &ObjectRef,
    body: &mut dyn FnMut(&dyn super::kv_state::KvState) -> Result<()>,
) -> Result<bool> {
    super::kv_state::run_on(of_object(o)?, body)
}

/// The cache `o` is, if it is one made here.
fn of_object(o: &ObjectRef) -> Result<Option<ObjPtr<PagedKvCacheObj>>> {
    // SAFETY: `create` makes every object of this index, with this payload.
    Ok(unsafe { super::kv_state::state_of(o, type_index()?) })
}

fn cache_arg(args: &Args<'_>, i: usize) -> Result<ObjPtr<PagedKvCacheObj>> {
    let o = args.object(i)?;
    of_object(&o)?.ok_or_else(|| {
        Error::type_error(format!("argument {i}: expected a {TYPE_KEY}, got {}", type_key_of(o.type_index())))
    })
}

impl PagedKvCacheObj {
    /// `body` on the cache's state, holding its lock.
    fn with<R>(&self, body: impl FnOnce(&mut State) -> Result<R>) -> Result<R> {
        let guard = self.0.lock();
        let mut state = guard
            .try_borrow_mut()
            .map_err(|_| Error::internal("the paged KV cache was called again from inside one of its own calls"))?;
        body(&mut state)
    }
}

impl super::kv_state::KvState for PagedKvCacheObj {
    fn add(&self, id: i64) -> Result<()> {
        self.with(|s| s.changed(|p| p.add(id)))
    }

    fn remove(&self, id: i64) -> Result<()> {
        self.with(|s| s.changed(|p| p.remove(id)))
    }

    fn fork(&self, parent: i64, child: i64, pos: i64) -> Result<()> {
        self.with(|s| s.with_page_copies(|p, copy| p.fork(parent, child, pos, copy)))
    }

    fn popn(&self, id: i64, n: i64) -> Result<()> {
        self.with(|s| s.with_page_copies(|p, copy| p.popn(id, n, copy)))
    }

    fn begin_forward(&self, ids: &[i64], lengths: &[i64], tree: Option<&[i64]>) -> Result<()> {
        self.with(|s| s.begin_forward(ids, lengths, tree))
    }

    fn end_forward(&self) -> Result<()> {
        Ok(())
    }

    fn clear(&self) -> Result<()> {
        self.with(|s| {
            s.pool.clear();
            s.views = None;
            Ok(())
        })
    }
}

impl State {
    /// A change of the pool, undone when it fails; the device arrays are stale after it.
    fn changed(&mut self, f: impl FnOnce(&mut blocks::Pool) -> Result<()>) -> Result<()> {
        self.with_page_copies(|p, _| f(p))
    }

    /// [`State::changed`] for changes that copy pages (forks, pops) through the model's kernel.
    fn with_page_copies(
        &mut self,
        f: impl FnOnce(&mut blocks::Pool, &mut dyn FnMut(i32, i32, i32) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        let (pages, kernel) = (&self.buffers.pages, &self.kernels.copy_single_page);
        let mut copy = |src: i32, dst: i32, n: i32| -> Result<()> {
            for layer in pages {
                attention::launch(
                    kernel,
                    &[
                        attention::K::T(layer),
                        attention::K::I(src as i64),
                        attention::K::I(dst as i64),
                        attention::K::I(n as i64),
                    ],
                )?;
            }
            Ok(())
        };
        let saved = self.pool.clone();
        let out = f(&mut self.pool, &mut copy);
        if out.is_err() {
            self.pool = saved;
        }
        self.views = None;
        out
    }

    fn begin_forward(&mut self, ids: &[i64], lengths: &[i64], tree: Option<&[i64]>) -> Result<()> {
        let total: i64 = lengths.iter().sum();
        if total > self.cfg.prefill_chunk {
            return Err(Error::internal(format!(
                "the batch appends {total} tokens, more than the prefill chunk size {} the cache was created with",
                self.cfg.prefill_chunk
            )));
        }
        if let Some(&n) = lengths.iter().find(|&&n| n <= 0) {
            return Err(Error::internal(format!("Append with length {n} is not allowed.")));
        }
        let shape = batch::Shape {
            page_size: self.cfg.page_size as i32,
            sliding: self.cfg.sliding,
            layer_window: self.cfg.layer_window,
            rope_inline: self.cfg.rope_mode == RopeMode::Inline,
        };
        let batch = &mut self.batch;
        self.views = None;
        // The batch's sequences checked and saved first: a pass that fails changes nothing.
        let saved = self.pool.checkpoint(ids)?;
        let out = batch.begin(&mut self.pool, &shape, ids, lengths, tree);
        match out {
            Ok(()) => self.pool.commit(),
            Err(_) => {
                self.pool.restore(saved);
                batch.seq_ids.clear();
                batch.append_lengths.clear();
            }
        }
        out
    }
}

pub(in crate::lm) fn globals() -> Vec<(&'static str, PackedFunc)> {
    let f = |name, body: fn(Args<'_>) -> Result<Value>| (name, PackedFunc::from_typed(body));
    let mut all = vec![f("vm.builtin.paged_attention_kv_cache_create", create_global)];
    all.extend(builtins::globals());
    all
}

/// Arguments 13..=27 of the creation: `["tirx", f]` (or empty, for none) of each kind.
fn backend(args: &Args<'_>, i: usize) -> Result<Option<PackedFunc>> {
    let items = super::args::items(args, i)?;
    let Some(kind) = items.first() else { return Ok(None) };
    let kind = kind
        .clone()
        .into_string()
        .map_err(|_| Error::type_error(format!("argument {i}: expected [\"tirx\", function]")))?;
    match (kind.as_str(), &items[1..]) {
        ("tirx", [Value::Func(f)]) => Ok(Some(f.clone())),
        ("flashinfer", _) => Err(Error::internal(format!(
            "argument {i}: FlashInfer attention kernels (CUDA) are not supported by this runtime; build the model with TIR kernels"
        ))),
        _ => Err(Error::type_error(format!("argument {i}: expected [\"tirx\", function] or an empty array, got a {kind:?} backend"))),
    }
}

fn optional_func(args: &Args<'_>, i: usize) -> Result<Option<PackedFunc>> {
    match args.to_value(i)? {
        Value::Func(f) => Ok(Some(f)),
        Value::Null => Ok(None),
        other => {
            Err(Error::type_error(format!("argument {i}: expected a function or None, got a {}", other.type_name())))
        }
    }
}

const CREATE: &str = "vm.builtin.paged_attention_kv_cache_create(cache_config, layer_indptr, num_qo_heads, num_kv_heads, qk_head_dim, v_head_dim, attn_kinds, enable_kv_transfer, rope_mode, rotary_scale, rotary_theta, rope_ext_factors, init, f_transpose_append_mha, f_transpose_append_mla, f_attention_prefill_ragged, f_attention_prefill, f_attention_decode, f_attention_prefill_sliding_window, f_attention_decode_sliding_window, f_attention_prefill_with_tree_mask_paged_kv, f_attention_prefill_with_tree_mask, f_mla_prefill, f_merge_inplace, f_split_rotary, f_copy_single_page, f_debug_get_kv, f_compact_copy)";

fn create_global(args: Args<'_>) -> Result<Value> {
    if !(28..=29).contains(&args.len()) {
        return Err(Error::internal(format!(
            "Invalid number of KV cache constructor args: {}; expected {CREATE}",
            args.len()
        )));
    }
    let cfg = config(&args)?;
    if backend(&args, 22)?.is_some() {
        return Err(Error::internal("argument 22: multi-head latent attention (MLA) is not supported by this runtime"));
    }
    let merge = super::args::functions(&args, 23)?;
    if merge.is_empty() {
        return Err(Error::internal("Merge inplace function is not defined."));
    }
    let kernels = Kernels {
        transpose_append: optional_func(&args, 13)?,
        prefill_ragged: backend(&args, 15)?,
        prefill: backend(&args, 16)?,
        decode: backend(&args, 17)?,
        prefill_sliding: backend(&args, 18)?,
        decode_sliding: backend(&args, 19)?,
        tree_paged: backend(&args, 20)?,
        tree_ragged: backend(&args, 21)?,
        merge,
        split_rotary: args.func(24)?,
        copy_single_page: args.func(25)?,
        debug_get_kv: args.func(26)?,
        compact_copy: args.func(27)?,
    };
    // Argument 14, the MLA layers' append kernel, models pass whatever their layers are.
    optional_func(&args, 14)?;
    create(cfg, kernels, &super::args::shape_arg(&args, 0)?).map(|c| Value::Object(c.to_object_ref()))
}

fn config(args: &Args<'_>) -> Result<Config> {
    let layers = super::args::shape_arg(args, 1)?;
    let [begin, end] = layers[..] else {
        return Err(Error::internal(format!("argument 1: layer_indptr {layers:?}: expected [begin, end] (one group)")));
    };
    let kinds = super::args::shape_arg(args, 6)?;
    let attn_kinds = kinds
        .iter()
        .map(|&k| match k {
            0 => Ok(AttnKind::Mha),
            3 => Ok(AttnKind::MhaSliding),
            1 => Err(Error::internal("multi-head latent attention (MLA) layers are not supported by this runtime")),
            2 => Err(Error::internal("linear attention layers are not supported (nor by apache-tvm)")),
            k => Err(Error::value(format!("argument 6: unknown attention kind {k}"))),
        })
        .collect::<Result<Vec<_>>>()?;
    if args.int(7)? != 0 {
        return Err(Error::internal(
            "argument 7: KV transfer (enable_kv_transfer) needs NVSHMEM, which this runtime does not have",
        ));
    }
    let rope_mode = match args.int(8)? {
        0 => RopeMode::None,
        1 => RopeMode::Normal,
        2 => RopeMode::Inline,
        m => return Err(Error::value(format!("argument 8: unknown rope_mode {m}"))),
    };
    let rope_ext_factors = match args.to_value(11)? {
        Value::NDArray(t) => Some(t),
        _ => None,
    };
    let init = args.ndarray(12)?;
    let cache_config = super::args::shape_arg(args, 0)?;
    let sliding_kinds = attn_kinds.contains(&AttnKind::MhaSliding);
    let want_sliding = cache_config.get(4).copied().unwrap_or(0) != 0;
    let layer_window = cache_config.get(5).copied().unwrap_or(1024);
    Ok(Config {
        page_size: cache_config.get(3).copied().unwrap_or(0),
        num_layers: end - begin,
        layer_begin: begin,
        num_qo_heads: args.int(2)?,
        num_kv_heads: args.int(3)?,
        head_dim: args.int(4)?,
        v_head_dim: args.int(5)?,
        prefill_chunk: cache_config.get(2).copied().unwrap_or(0),
        sliding: want_sliding && !sliding_kinds,
        layer_window: sliding_kinds.then_some(layer_window),
        attn_kinds,
        // Sliding sequences rotate inside the kernels: stored keys may move.
        rope_mode: if want_sliding && rope_mode != RopeMode::None { RopeMode::Inline } else { rope_mode },
        rotary_scale: args.float(9)?,
        rotary_theta: args.float(10)?,
        rope_ext_factors,
        dtype: init.dtype(),
        device: init.device(),
    })
}

fn positive(what: &str, v: i64) -> Result<i64> {
    if v <= 0 {
        return Err(Error::value(format!("{what} must be positive, got {v}")));
    }
    Ok(v)
}

fn create(cfg: Config, kernels: Kernels, cache_config: &[i64]) -> Result<ObjPtr<PagedKvCacheObj>> {
    if !(5..=6).contains(&cache_config.len()) {
        return Err(Error::internal(
            "KV cache config must contain five legacy fields and an optional per-layer sliding window size.",
        ));
    }
    let reserved = positive("reserved_num_seqs (cache_config[0])", cache_config[0])?;
    let capacity = positive("total_token_capacity (cache_config[1])", cache_config[1])?;
    positive("prefill_chunk_size (cache_config[2])", cfg.prefill_chunk)?;
    let page_size = positive("page_size (cache_config[3])", cfg.page_size)?;
    positive("per-layer sliding window size (cache_config[5])", cache_config.get(5).copied().unwrap_or(1024))?;
    for (what, v) in [
        ("num_qo_heads", cfg.num_qo_heads),
        ("num_kv_heads", cfg.num_kv_heads),
        ("qk_head_dim", cfg.head_dim),
        ("number of layers", cfg.num_layers),
    ] {
        positive(what, v)?;
    }
    if cfg.num_qo_heads % cfg.num_kv_heads != 0 {
        return Err(Error::value(format!(
            "num_qo_heads {} is not a multiple of num_kv_heads {}",
            cfg.num_qo_heads, cfg.num_kv_heads
        )));
    }
    if cfg.layer_begin < 0 || (cfg.layer_begin + cfg.num_layers) as usize > cfg.attn_kinds.len() {
        return Err(Error::value(format!(
            "layers {}..{} of {} attention kinds",
            cfg.layer_begin,
            cfg.layer_begin + cfg.num_layers,
            cfg.attn_kinds.len()
        )));
    }
    if cfg.rope_ext_factors.is_some() && cfg.rope_mode != RopeMode::Normal {
        return Err(Error::internal("The RoPE mode must be normal to support RoPE extension factors."));
    }
    let mut pages = (capacity + page_size - 1) / page_size + 1;
    if cache_config[4] != 0 {
        // A sliding sequence may hold two pages more than its window.
        pages += reserved * 2;
    }
    let i32_pages = i32::try_from(pages).map_err(|_| Error::value(format!("{pages} pages are too many")))?;
    let buffers = buffers(&cfg, pages)?;
    let aux_capacity = (2
        * (5 * (reserved as usize + 1)
            + 2 * pages as usize
            + 6 * reserved as usize
            + 2 * MAX_TREE_MASK * reserved as usize)
        + 3 * (reserved as usize + 1)
        + 2 * cfg.prefill_chunk as usize)
        .next_multiple_of(4);
    let state = State {
        pool: blocks::Pool::new(page_size as i32, i32_pages, cfg.sliding),
        batch: batch::Batch::default(),
        aux: aux::Aux::new(aux_capacity, cfg.device)?,
        views: None,
        cfg,
        kernels,
        buffers,
    };
    Ok(ObjPtr::new_as(PagedKvCacheObj(ReentrantMutex::new(RefCell::new(state))), type_index()?))
}

/// Elements of one sequence's tree mask: two per node.
const MAX_TREE_MASK: usize = 2 * batch::MAX_TREE;

fn buffers(cfg: &Config, pages: i64) -> Result<Buffers> {
    let (dt, dev, chunk) = (cfg.dtype, cfg.device, cfg.prefill_chunk);
    let layer = [pages, 2, cfg.num_kv_heads, cfg.page_size, cfg.head_dim];
    let local = &cfg.attn_kinds[cfg.layer_begin as usize..(cfg.layer_begin + cfg.num_layers) as usize];
    // Zeroed: slots no token was written to yet stay finite if a kernel reads them masked.
    let page_layer = || -> Result<NDArray> {
        let t = NDArray::empty(&layer, dt, dev)?;
        t.copy_from_bytes(&vec![0u8; t.nbytes()])?;
        Ok(t)
    };
    Ok(Buffers {
        pages: local.iter().map(|_| page_layer()).collect::<Result<_>>()?,
        q: NDArray::empty(&[chunk, cfg.num_qo_heads, cfg.head_dim], dt, dev)?,
        k: NDArray::empty(&[chunk, cfg.num_kv_heads, cfg.head_dim], dt, dev)?,
        v: NDArray::empty(&[chunk, cfg.num_kv_heads, cfg.v_head_dim], dt, dev)?,
        output: NDArray::empty(&[chunk, cfg.num_qo_heads, cfg.v_head_dim], dt, dev)?,
        lse: NDArray::empty(&[chunk, cfg.num_qo_heads], DLDataType::FLOAT32, dev)?,
        merged_lse: NDArray::empty(&[chunk, cfg.num_qo_heads], DLDataType::FLOAT32, dev)?,
        split: None,
    })
}
