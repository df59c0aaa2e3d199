"""Prefill latency and decode tokens/s of a language model on the paged KV cache through
apache-tvm 0.27's Python, runtime-only (TVM_USE_RUNTIME_LIB=1): tests/tvm027_runtime/tiny_llm.py's
model (a build folder: the tiny one or `larger`), one sequence of PROMPT tokens prefilled, then
greedy decode steps of one sequence and of four at once (forks of it). Prints JSON: µs per
prefill, per decode step (batch 1 and 4), medians over repeats. benches/lm/decode_bench.sh runs
it on the wheel's runtime and on this one, alternating.

    python decode.py BUILD_DIR [PROMPT] [STEPS]
"""
import json
import os
import statistics
import sys
import time

import numpy as np
import tvm
import tvm_ffi
from tvm.runtime.vm import VirtualMachine

folder = sys.argv[1]
prompt_len = int(sys.argv[2]) if len(sys.argv) > 2 else 64
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 64
dev = tvm.cpu()
g = tvm.get_global_func
meta = json.load(open(os.path.join(folder, "tensor-cache.json")))
names = meta["metadata"]["params"]
vocab, hidden = meta["records"][0]["records"][0]["shape"]
g("vm.builtin.tensor_cache.load")(folder, 1, 0)
params = g("vm.builtin.param_array_from_cache_by_name_unpacked")(*names)
vm = VirtualMachine(tvm.runtime.load_module(os.path.join(folder, "tiny_llm.so")), dev)
add, fork, remove = (g(f"vm.builtin.kv_state_{n}") for n in ("add_sequence", "fork_sequence", "remove_sequence"))
begin, end = g("vm.builtin.kv_state_begin_forward"), g("vm.builtin.kv_state_end_forward")
cache = vm["create_paged_kv_cache"](*(tvm_ffi.Shape([n]) for n in (8, 4096, max(prompt_len, 64), 16, 0)))
embed, prefill, decode = vm["embed"], vm["prefill"], vm["decode"]


def forward(fn, seqs, ids, shape):
    begin(cache, tvm_ffi.Shape(seqs), tvm_ffi.Shape([len(ids) // len(seqs)] * len(seqs)))
    x = embed(tvm.runtime.tensor(np.array(ids, "int32"), dev), params)
    logits = fn(x._create_view(shape) if hasattr(x, "_create_view") else tvm.runtime.tensor(x.numpy().reshape(shape), dev), cache, params)[0]
    end(cache)
    return logits.numpy().reshape(len(seqs), -1, vocab)[:, -1].argmax(-1).tolist()


def one_round():
    add(cache, 0)
    t0 = time.perf_counter()
    nxt = forward(prefill, [0], [i % vocab for i in range(prompt_len)], (1, prompt_len, hidden))
    t_prefill = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(steps):
        nxt = forward(decode, [0], nxt, (1, 1, hidden))
    t_decode1 = (time.perf_counter() - t0) / steps
    for s in (1, 2, 3):
        fork(cache, 0, s, -1)
    nxt = [nxt[0], (nxt[0] + 1) % vocab, (nxt[0] + 2) % vocab, (nxt[0] + 3) % vocab]
    t0 = time.perf_counter()
    for _ in range(steps):
        nxt = forward(decode, [0, 1, 2, 3], nxt, (4, 1, hidden))
    t_decode4 = (time.perf_counter() - t0) / steps
    for s in range(4):
        remove(cache, s)
    return t_prefill, t_decode1, t_decode4


one_round()  # warm up
rounds = [one_round() for _ in range(5)]
med = [statistics.median(r[i] for r in rounds) * 1e6 for i in range(3)]
print(json.dumps({f"prefill of {prompt_len} tokens (µs)": med[0], "decode step, 1 sequence (µs)": med[1],
                  "decode step, 4 sequences (µs)": med[2]}, ensure_ascii=False))
