"""A tiny language model built with apache-tvm 0.27's `relax.frontend.nn` and its `nn.llm` paged KV
cache (LLaMA-shaped: embedding, layers of RMS norm, fused-QKV attention with rotary embeddings
through the paged KV cache, SiLU-gated MLP; random weights, seeded; CPU), then a greedy
generation through apache-tvm's Python: prefill of one sequence, a second sequence forked from
it, both decoded together. The tokens and logits are what a runtime is judged by.

    python tiny_llm.py build DIR [larger]  # apache-tvm's compiler: DIR/tiny_llm.so, weight shards
    python tiny_llm.py run DIR OUT.json [tvmrt]  # runtime-only (TVM_USE_RUNTIME_LIB=1): generate,
                                                 # record (apache-tvm's Python, or tvmrt's)
    python tiny_llm.py compare A.json B.json   # the same tokens, logits within 1e-4

The weights go into a tensor cache (`tensor-cache.json` and shards of raw float32, as MLC-LLM
ships weights) that the run loads with `vm.builtin.tensor_cache.load`. tests/data/lm-0.27/
tiny_llm holds the tiny build (`build tests/data/lm-0.27/tiny_llm`), which tests/lm_decode.rs
runs too; scripts/tvm027_runtime.sh runs it on the wheel's runtime and on this one, and
benches/lm/decode_bench.sh times it and the `larger` build side by side.
"""
import json
import os
import sys
import types

import numpy as np

SIZES = {
    # hidden, layers, heads, kv heads, head dim, mlp, vocabulary
    "tiny": (32, 2, 2, 1, 16, 64, 128),
    "larger": (512, 4, 8, 2, 64, 1408, 4096),
}
HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = SIZES["tiny"]
PROMPT = [3, 141, 59, 26, 5, 35, 89, 79, 32, 38, 46, 26, 43]
STEPS = 12


def build(out, size="tiny"):
    global HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB  # noqa: PLW0603
    HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = SIZES[size]
    import tvm
    from tvm.contrib import tvmjs
    from tvm import relax, tirx
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op
    from tvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, RopeMode, TIRPagedKVCache

    target = tvm.target.Target("llvm")

    class Attention(nn.Module):
        def __init__(self):
            self.qkv = nn.Linear(HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD_DIM, bias=False)
            self.out = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)

        def forward(self, x, cache, layer):
            b, s, _ = x.shape
            qkv = op.reshape(self.qkv(x), (b, s, HEADS + 2 * KV_HEADS, HEAD_DIM))
            o = cache.attention_with_fused_qkv(layer, qkv, HEADS, sm_scale=HEAD_DIM**-0.5)
            return self.out(op.reshape(o, (b, s, HEADS * HEAD_DIM)))

    class Layer(nn.Module):
        def __init__(self):
            self.attn_norm = nn.RMSNorm(HIDDEN, -1, 1e-5, bias=False)
            self.attn = Attention()
            self.mlp_norm = nn.RMSNorm(HIDDEN, -1, 1e-5, bias=False)
            self.gate_up = nn.Linear(HIDDEN, 2 * FFN, bias=False)
            self.down = nn.Linear(FFN, HIDDEN, bias=False)

        def forward(self, x, cache, layer):
            x = x + self.attn(self.attn_norm(x), cache, layer)
            gate, up = op.split(self.gate_up(self.mlp_norm(x)), 2, axis=-1)
            return x + self.down(op.silu(gate) * up)

    class TinyLM(nn.Module):
        def __init__(self):
            self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
            self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
            self.norm = nn.RMSNorm(HIDDEN, -1, 1e-5, bias=False)
            self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

        def body(self, x, cache):
            for i, layer in enumerate(self.layers):
                x = layer(x, cache, i)
            return self.lm_head(self.norm(x))

        def embed(self, ids):
            return self.embed_tokens(ids)

        def prefill(self, x, cache):
            return self.body(x, cache), cache

        def decode(self, x, cache):
            return self.body(x, cache), cache

        def create_paged_kv_cache(self, max_batch_size: tirx.Var, max_total_seq_len: tirx.Var,
                                  prefill_chunk_size: tirx.Var, page_size: tirx.Var,
                                  support_sliding_window: tirx.Var):
            return TIRPagedKVCache(
                attn_kind="mha", max_batch_size=max_batch_size, max_total_seq_len=max_total_seq_len,
                prefill_chunk_size=prefill_chunk_size, page_size=page_size,
                support_sliding_window=support_sliding_window, layer_partition=relax.ShapeExpr([0, LAYERS]),
                num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                qk_head_dim=HEAD_DIM, v_head_dim=HEAD_DIM, mla_original_qk_head_dim=0,
                mla_original_v_head_dim=0, rope_mode=RopeMode.NORMAL, rope_scale=1, rope_theta=10000,
                rope_scaling={}, rope_ext_factors=relax.prim_value(0), rotary_dim=HEAD_DIM,
                enable_disaggregation=False, dtype="float32", target=target)

    packed = {"param_mode": "packed", "effect_mode": "none"}
    cache_spec = nn.spec.Object(object_type=PagedKVCache)
    spec = {
        "embed": {"ids": nn.spec.Tensor(["n"], "int32"), "$": packed},
        "prefill": {"x": nn.spec.Tensor([1, "n", HIDDEN], "float32"), "cache": cache_spec, "$": packed},
        "decode": {"x": nn.spec.Tensor(["b", 1, HIDDEN], "float32"), "cache": cache_spec, "$": packed},
        "create_paged_kv_cache": {
            "max_batch_size": int, "max_total_seq_len": int, "prefill_chunk_size": int, "page_size": int,
            "support_sliding_window": int, "$": {"param_mode": "none", "effect_mode": "none"},
        },
    }
    os.makedirs(out, exist_ok=True)
    model = TinyLM()
    mod, params = model.export_tvm(spec=spec)
    tvm.compile(mod, target=target).export_library(os.path.join(out, "tiny_llm.so"))
    rng = np.random.default_rng(7)
    weights = {name: (rng.standard_normal([int(d) for d in p.shape]) * HIDDEN**-0.5 * 2.5).astype("float32") for name, p in params}
    meta = {"sizes": size, "params": [name for name, _ in params]}
    tvmjs.dump_tensor_cache(weights, out, encode_format="raw", meta_data=meta, shard_cap_mb=1 if size == "larger" else 0.05, show_progress=False)
    print("wrote", os.path.join(out, "tiny_llm.so"), "with", len(params), "parameters")


def front(kind):
    """What a generation calls, from apache-tvm's Python (`tvm`) or this runtime's (`tvmrt`)."""
    if kind == "tvmrt":
        import tvmrt

        dev = tvmrt.cpu()
        return types.SimpleNamespace(
            vm=lambda path: tvmrt.relax.VirtualMachine(tvmrt.load_module(path), dev),
            g=tvmrt.get_global_func, tensor=tvmrt.nd.array, dev_type=dev.device_type,
            shape=lambda dims: tvmrt.get_global_func("runtime.ShapeTuple")(*dims))
    import tvm
    import tvm_ffi
    from tvm.runtime.vm import VirtualMachine

    dev = tvm.cpu()
    return types.SimpleNamespace(
        vm=lambda path: VirtualMachine(tvm.runtime.load_module(path), dev),
        g=tvm.get_global_func, tensor=lambda a: tvm.runtime.tensor(a, dev),
        dev_type=dev.dlpack_device_type(), shape=tvm_ffi.Shape)


def run(folder, out_json, kind="tvm"):
    f = front(kind)
    vm = f.vm(os.path.join(folder, "tiny_llm.so"))
    g = f.g
    meta = json.load(open(os.path.join(folder, "tensor-cache.json")))["metadata"]
    global HIDDEN, VOCAB  # noqa: PLW0603
    HIDDEN, VOCAB = SIZES[meta["sizes"]][0], SIZES[meta["sizes"]][6]
    g("vm.builtin.tensor_cache.load")(folder, f.dev_type, 0)
    params = g("vm.builtin.param_array_from_cache_by_name_unpacked")(*meta["params"])
    add, fork = g("vm.builtin.kv_state_add_sequence"), g("vm.builtin.kv_state_fork_sequence")
    begin, end = g("vm.builtin.kv_state_begin_forward"), g("vm.builtin.kv_state_end_forward")
    # Each size is a one-dimension shape, as MLC-LLM passes them.
    cache = vm["create_paged_kv_cache"](*(f.shape([n]) for n in (4, 512, 64, 16, 0)))

    def step(fn, seqs, ids, shape):
        begin(cache, f.shape(seqs), f.shape([len(ids) // len(seqs)] * len(seqs)))
        x = vm["embed"](f.tensor(np.array(ids, "int32")), params).numpy()
        logits = vm[fn](f.tensor(x.reshape(shape)), cache, params)[0]
        end(cache)
        return logits.numpy()

    add(cache, 0)
    prompt = [t % VOCAB for t in PROMPT]
    logits = step("prefill", [0], prompt, (1, len(prompt), HIDDEN))[0, -1]
    record = {"logits": [logits.tolist()], "tokens": [[int(logits.argmax())], []]}
    fork(cache, 0, 1, -1)
    # The fork starts from another token than its parent, so the two sequences differ.
    nxt = [record["tokens"][0][-1], (record["tokens"][0][-1] + 1) % VOCAB]
    record["tokens"][1].append(nxt[1])
    for _ in range(STEPS):
        logits = step("decode", [0, 1], nxt, (2, 1, HIDDEN))[:, 0]
        nxt = [int(row.argmax()) for row in logits]
        for i in range(2):
            record["tokens"][i].append(nxt[i])
        record["logits"].append(logits.tolist())
    g("vm.builtin.tensor_cache.clear")()
    with open(out_json, "w") as out:
        json.dump(record, out)
    print(f"  tokens ({kind}):", record["tokens"])


def compare(a_json, b_json):
    a, b = json.load(open(a_json)), json.load(open(b_json))
    assert a["tokens"] == b["tokens"], f"tokens differ: {a['tokens']} vs {b['tokens']}"
    worst = max(float(np.abs(np.array(x) - np.array(y)).max()) for x, y in zip(a["logits"], b["logits"]))
    assert worst <= 1e-4, f"logits differ by {worst}"
    same = all(np.array_equal(np.array(x), np.array(y)) for x, y in zip(a["logits"], b["logits"]))
    print(f"  the same {sum(map(len, a['tokens']))} tokens; logits {'bit for bit' if same else f'within {worst:.1e}'}")


if __name__ == "__main__":
    {"build": build, "run": run, "compare": compare}[sys.argv[1]](*sys.argv[2:])
