"""One call of each language-model builtin a generation loop makes per token, through apache-tvm
0.27's Python runtime-only (TVM_USE_RUNTIME_LIB=1), at a vocabulary of V: ns per call, as JSON
{"case@V": ns}. benches/lm/sampling_bench.sh runs it on the wheel's runtime and on this one as
both libraries, alternating, and prints the ratios.

    python benches/lm/sampling.py [V ...]      # default 32000 128256
"""
import json
import sys
import time

import numpy as np

import tvm


def per_call(fn, budget_s=0.3):
    """Best of up to 7 timed batches of calls, in ns per call."""
    fn()
    n, best, spent = 1, float("inf"), 0.0
    while True:
        t0 = time.perf_counter_ns()
        fn()
        if time.perf_counter_ns() - t0 > 2e6:
            break
        n *= 2
        if n > 4096:
            break
    for _ in range(7):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        dt = time.perf_counter_ns() - t0
        best, spent = min(best, dt / n), spent + dt / 1e9
        if spent > budget_s:
            break
    return best


def cases(vocab):
    rng = np.random.default_rng(7)
    g = tvm.get_global_func
    logits = tvm.runtime.tensor(rng.normal(0, 3, (1, vocab)).astype("float32"))
    prob = rng.random(vocab).astype("float32") ** 8
    prob = tvm.runtime.tensor((prob / prob.sum()).astype("float32"))
    batch_prob = tvm.runtime.tensor(np.tile(prob.numpy(), (4, 1)))
    uniform = tvm.runtime.tensor(rng.random((4, 1)).astype("float32"))
    ids = tvm.runtime.tensor(rng.integers(0, vocab, 64).astype("int32"))
    freqs = tvm.runtime.tensor(rng.integers(1, 4, 64).astype("int32"))
    scratch = tvm.runtime.tensor(logits.numpy())
    from_logits, from_prob = g("vm.builtin.sample_top_p_from_logits"), g("vm.builtin.sample_top_p_from_prob")
    multinomial = g("vm.builtin.multinomial_from_uniform")
    rep, pf = g("vm.builtin.apply_repetition_penalty"), g("vm.builtin.apply_presence_and_frequency_penalty")
    soft = g("vm.builtin.apply_softmax_with_temperature")
    yield "sample_top_p_from_logits", lambda: from_logits(logits, 0.7, 0.95, 0.5)
    yield "sample_top_p_from_prob", lambda: from_prob(prob, 0.95, 0.5)
    yield "multinomial_from_uniform (batch 4)", lambda: multinomial(batch_prob, uniform)
    yield "apply_repetition_penalty (64 ids)", lambda: rep(scratch, ids, 1.0)
    yield "apply_presence_and_frequency_penalty", lambda: pf(scratch, ids, freqs, 0.0, 0.0)
    yield "apply_softmax_with_temperature", lambda: soft(scratch, 1.0)


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [32000, 128256]
    out = {}
    for v in sizes:
        for name, fn in cases(v):
            out[f"{name}@{v}"] = per_call(fn)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
