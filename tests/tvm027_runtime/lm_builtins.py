"""The language-model builtins through apache-tvm 0.27's own Python, runtime-only
(TVM_USE_RUNTIME_LIB=1): apache/tvm's own tests of the older KV cache and the tensor cache
(third_party/tvm_tests' test_runtime_builtin.py, whose module needs only the runtime for them),
then a few thousand seeded calls of the samplers, penalties, softmax, the older KV cache and the
tensor cache, whose results must match the wheel's own runtime bit for bit.

    python lm_builtins.py record OUT.json     # on the wheel's libraries: run, record results
    python lm_builtins.py check OUT.json      # on this runtime as both libraries: run, compare

scripts/tvm027_runtime.sh runs both.
"""
import json
import os
import sys
import tempfile
import types

import numpy as np

import tvm
import tvm_ffi

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "..", "..", "third_party", "tvm_tests", "tests", "python", "relax")


def apache_tests():
    """apache/tvm's tests of these builtins, from its unchanged file. Runtime-only, `tvm.relax`
    cannot be imported (it needs the compiler); the file imports two shape-code enums from it
    that only other tests use, so those come from a stand-in module."""
    stand_in = types.ModuleType("tvm.relax.testing.runtime_builtin")
    stand_in.MakeShapeCode = stand_in.MatchShapeCode = None
    for name in ("tvm.relax", "tvm.relax.testing"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["tvm.relax.testing.runtime_builtin"] = stand_in
    sys.path.insert(0, SUITE)
    import test_runtime_builtin as t  # noqa: E402

    names = [
        "test_attention_kv_cache",
        "test_attention_kv_cache_window_override",
        "test_attention_kv_cache_window_override_with_sinks",
        "test_tensor_cache",
        "test_tensor_cache_update",
    ]
    np.random.seed(0)
    for name in names:
        getattr(t, name)()
        print(f"  apache/tvm {name}: passed")


def f(name):
    return tvm.get_global_func(name)


def tensor(a):
    return tvm.runtime.tensor(np.ascontiguousarray(a))


def outcome(call):
    """A call's result, or None for an error (messages differ; that one fails is what counts)."""
    try:
        return call()
    except Exception:  # noqa: BLE001 - any error is the outcome
        return None


def bits(a):
    return np.ascontiguousarray(a).view(np.uint8).tobytes().hex()


def sampler_cases(rng):
    from_logits, from_prob = f("vm.builtin.sample_top_p_from_logits"), f("vm.builtin.sample_top_p_from_prob")
    out = []
    for i in range(1500):
        n = int(rng.choice([1, 2, 4, 16, 17, 33, 100, 257]))
        levels = rng.integers(1, 6) if i % 3 == 0 else None  # ties, many of them
        x = (rng.integers(0, levels, n) if levels else rng.normal(0, 3, n)).astype("float32")
        t = float(rng.choice([0.0, 1e-7, 0.5, 1.0, 2.0]))
        p = float(rng.choice([0.0, 0.1, 0.5, 0.9, 0.95, 1.0]))
        u = float(rng.choice([rng.random(), 0.0, 1.0, 0.999999]))
        out.append(outcome(lambda: from_logits(tensor(x.reshape(1, n)), t, p, u)))
        prob = np.abs(x) if i % 2 else np.exp(x - x.max())
        prob = (prob / max(prob.sum(), 1e-30)).astype("float32") if i % 5 else prob.astype("float32")
        out.append(outcome(lambda: from_prob(tensor(prob), p, u)))
    return out


def multinomial_cases(rng):
    g = f("vm.builtin.multinomial_from_uniform")
    out = []
    for _ in range(300):
        batch, vocab = int(rng.integers(1, 5)), int(rng.integers(1, 60))
        prob = rng.random((batch, vocab)).astype("float32")
        prob /= prob.sum(axis=1, keepdims=True)
        u = rng.random((batch, 1)).astype("float32")
        out.append(outcome(lambda: g(tensor(prob), tensor(u)).numpy().ravel().tolist()))
    return out


def in_place_cases(rng):
    rep, pf = f("vm.builtin.apply_repetition_penalty"), f("vm.builtin.apply_presence_and_frequency_penalty")
    soft = f("vm.builtin.apply_softmax_with_temperature")
    out = []
    for _ in range(300):
        vocab = int(rng.integers(1, 200))
        logits = rng.normal(0, 4, (1, vocab)).astype("float32")
        ids = rng.integers(0, vocab, int(rng.integers(0, 20))).astype("int32")
        freqs = rng.integers(1, 5, ids.size).astype("int32")
        a, b, c = tensor(logits), tensor(logits), tensor(logits)
        rep(a, tensor(ids), float(rng.choice([1.0, 1.1, 1.3, 2.0])))
        pf(b, tensor(ids), tensor(freqs), float(rng.random()), float(rng.random()))
        soft(c, float(rng.choice([0.3, 0.7, 1.0, 1.5])))
        out.append([bits(a.numpy()), bits(b.numpy()), bits(c.numpy())])
    return out


def kv_cache_cases(rng):
    create, append, update = (f(f"vm.builtin.attention_kv_cache_{n}") for n in ("create", "append", "update"))
    view, popn, clear = (f(f"vm.builtin.attention_kv_cache_{n}") for n in ("view", "array_popn", "array_clear"))
    window = f("vm.builtin.attention_kv_cache_window_override_with_sinks")
    out = []
    for case in range(60):
        width, reserve = int(rng.integers(1, 4)), int(rng.choice([1, 2, 4]))  # reaches the window (8) exactly
        # A window counts none of the initial row (its unwritten slots would be uninitialized).
        kind = case % 3
        fill = 0 if kind == 1 else -1
        cache = create(tensor(np.full((1, width), -7, "float32")), tvm_ffi.Shape([reserve, width]), fill)
        step = 0
        for _ in range(12):
            rows = int(rng.integers(1, 4))
            value = tensor((np.arange(rows * width) + 100 * step).reshape(rows, width).astype("float32"))
            if kind == 0:
                cache = append(cache, value)
            elif kind == 1:
                cache = window(cache, value, 8, 2) if rows <= 6 else cache
            else:
                cache = append(cache, value)
                full = view(cache).numpy()
                cache = update(cache, tensor(full * 2))
                if step % 4 == 3:
                    popn(tvm_ffi.convert([cache]), 1)
            step += 1
            out.append(bits(view(cache).numpy()))
        clear(tvm_ffi.convert([cache]))
        out.append(list(view(cache).shape))
    return out


def rnn_state_cases(rng):
    """Random decode, prefill, pop, fork and remove steps on an RNN state whose getter and setter
    are Python functions (as a model's kernels: the state's slot and history indices given), each
    step's getter output, indices and every sequence's state recorded."""
    create = f("vm.builtin.rnn_state_create")
    add, remove, fork, popn = (f(f"vm.builtin.kv_state_{n}") for n in ("add_sequence", "remove_sequence", "fork_sequence", "popn"))
    begin, end = f("vm.builtin.kv_state_begin_forward"), f("vm.builtin.kv_state_end_forward")
    get, put, debug = f("vm.builtin.rnn_state_get"), f("vm.builtin.rnn_state_set"), f("vm.builtin.rnn_state_debug_get")
    max_history, out = 3, []

    def f_get(storage, slots, history, o_data):
        s, a, b = storage.numpy(), slots.numpy(), history.numpy()
        out.append(["get", a.tolist(), b.tolist()])
        o_data.copyfrom(np.stack([s[i, j] for i, j in zip(a, b)]).astype(o_data.dtype))

    def f_set(storage, slots, history, data):
        s, a, b, d = storage.numpy(), slots.numpy(), history.numpy(), data.numpy()
        out.append(["set", a.tolist(), b.tolist()])
        for k, (i, j) in enumerate(zip(a, b)):
            s[i, (j + 1) % max_history] = d[k]
        storage.copyfrom(s)

    init = [tensor(np.zeros((2,), "float32")), tensor(np.full((1, 2), 9, "int32"))]
    state = create(2, 4, max_history, [f_get, f_get], [f_set, f_set], init)
    live, next_id = [], 0
    for step in range(150):
        op = rng.choice(["add", "add", "step", "step", "step", "pop", "fork", "remove"])
        if op == "add" or not live:
            out.append(outcome(lambda: add(state, next_id)) is not None)
            live.append(next_id) if len(live) < 4 else None
            next_id += 1
        elif op == "step":
            batch = [int(x) for x in rng.choice(live, size=int(rng.integers(1, len(live) + 1)), replace=False)]
            lengths = [int(rng.choice([1, 1, 1, 3])) for _ in batch]
            begin(state, tvm_ffi.Shape(batch), tvm_ffi.Shape(lengths))
            for layer in range(2):
                o = tensor(np.zeros((len(batch), 2), "float32"))
                get(state, layer, 0, o)
                out.append(bits(o.numpy()))
                put(state, layer, 0, tensor(np.full((len(batch), 2), step + layer, "float32")))
                put(state, layer, 1, tensor(np.full((len(batch), 1, 2), -step, "int32")))
            end(state)
        elif op == "pop":
            out.append(outcome(lambda: popn(state, int(rng.choice(live)), int(rng.integers(0, 3)))) is not None)
        elif op == "fork":
            out.append(outcome(lambda: fork(state, int(rng.choice(live)), next_id, -1)) is not None)
            live.append(next_id) if len(live) < 4 else None
            next_id += 1
        else:
            gone = int(rng.choice(live))
            remove(state, gone)
            live.remove(gone)
        for seq in live:
            for layer in range(2):
                out.append([bits(debug(state, layer, k, seq).numpy()) for k in range(2)])
    return out


KERNELS = os.path.join(HERE, "..", "data", "lm-0.27")


def rnn_kernels(device):
    """The RNN state's getters and setters of apache/tvm's test, compiled (tests/data/lm-0.27)."""
    name = "rnn_state_cpu.so" if device.dlpack_device_type() == 1 else "rnn_state_opencl.so"
    lib = tvm.runtime.load_module(os.path.join(KERNELS, name))
    return [lib[f"get_{k}"] for k in range(2)], [lib[f"set_{k}"] for k in range(2)]


def rnn_state_with_kernels(device, rng=None):
    """apache/tvm's RNN state tests (test_runtime_builtin_rnn_state.py: get, set, popn, fork, each
    against its numpy values) with its own kernels on `device`; then, given `rng`, random steps
    whose states are returned for comparison."""
    g = {n: f(f"vm.builtin.{n}") for n in ("kv_state_clear", "kv_state_add_sequence", "kv_state_fork_sequence",
                                           "kv_state_popn", "kv_state_begin_forward", "kv_state_end_forward",
                                           "rnn_state_get", "rnn_state_set", "rnn_state_debug_get")}
    gets, sets = rnn_kernels(device)
    half = "float16" if device.dlpack_device_type() == 1 else "float32"  # PoCL has no half precision
    zero, one = np.full((16, 16), 0.0, half), np.full((32, 32), 1.0, "float32")
    two, three = np.full((16, 16), 2.0, half), np.full((32, 32), 3.0, "float32")
    on = lambda a: tvm.runtime.tensor(a, device=device)  # noqa: E731
    make = lambda: f("vm.builtin.rnn_state_create")(1, 4, 4, gets, sets, [on(zero), on(one)])  # noqa: E731

    def states(state, seq):
        return [g["rnn_state_debug_get"](state, 0, k, seq).numpy() for k in range(2)]

    def step(state, seqs, values):
        g["kv_state_begin_forward"](state, tvm_ffi.Shape(seqs), tvm_ffi.Shape([1] * len(seqs)))
        for k, v in enumerate(values):
            g["rnn_state_set"](state, 0, k, on(np.stack([v] * len(seqs))))
        g["kv_state_end_forward"](state)

    state = make()  # get
    g["kv_state_add_sequence"](state, 0)
    g["kv_state_begin_forward"](state, tvm_ffi.Shape([0]), tvm_ffi.Shape([1]))
    outs = [on(np.empty((1, 16, 16), half)), on(np.empty((1, 32, 32), "float32"))]
    for k, o in enumerate(outs):
        g["rnn_state_get"](state, 0, k, o)
    g["kv_state_end_forward"](state)
    assert (outs[0].numpy() == zero).all() and (outs[1].numpy() == one).all()
    state = make()  # set
    for seq in range(3):
        g["kv_state_add_sequence"](state, seq)
    step(state, [0, 2], [two, three])
    for seq, want in [(0, [two, three]), (1, [zero, one]), (2, [two, three])]:
        assert all((a == b).all() for a, b in zip(states(state, seq), want)), seq
    state = make()  # popn
    g["kv_state_add_sequence"](state, 0)
    step(state, [0], [two, three])
    g["kv_state_popn"](state, 0, 1)
    assert all((a == b).all() for a, b in zip(states(state, 0), [zero, one]))
    assert outcome(lambda: g["kv_state_popn"](state, 0, 1)) is None
    state = make()  # fork
    g["kv_state_add_sequence"](state, 0)
    step(state, [0], [two, three])
    g["kv_state_fork_sequence"](state, 0, 1, -1)
    g["kv_state_popn"](state, 1, 1)
    assert all((a == b).all() for a, b in zip(states(state, 0), [two, three]))
    assert all((a == b).all() for a, b in zip(states(state, 1), [zero, one]))
    print(f"  apache/tvm test_runtime_builtin_rnn_state.py (get, set, popn, fork) on {device}: passed")
    if rng is None:
        return []
    out, state, live = [], make(), []
    for i in range(4):
        g["kv_state_add_sequence"](state, i)
        live.append(i)
    for n in range(40):
        seqs = [int(x) for x in rng.choice(live, size=int(rng.integers(1, 5)), replace=False)]
        step(state, seqs, [np.full((16, 16), n, "float16"), rng.normal(0, 1, (32, 32)).astype("float32")])
        if n % 3 == 2:
            out.append(outcome(lambda: g["kv_state_popn"](state, seqs[0], int(rng.integers(0, 3)))) is not None)
        out.append([bits(a) for seq in live for a in states(state, seq)])
    return out


def tensor_cache_cases(rng, device=None):
    from tvm.contrib import tvmjs

    params = {
        "lm.x_0": np.array([1, 2, 3], "int32"),
        "lm.x_1": rng.normal(0, 1e3, (7, 5)).astype("float32"),
        "lm.x_2": rng.normal(0, 1, (4,)).astype("float16"),
        "lm.x_3": np.array([3.4e38, -3.4e38, np.inf, 1.00390625, -2.5e-3], "float32"),
    }
    out = []
    for fmt in ("raw", "f32-to-bf16"):
        with tempfile.TemporaryDirectory() as d:
            tvmjs.dump_tensor_cache(params, d, encode_format=fmt, shard_cap_mb=1, show_progress=False)
            device = device or tvm.cpu()
            f("vm.builtin.tensor_cache.load")(d, device.dlpack_device_type(), device.index)
        got = f("vm.builtin.param_array_from_cache")("lm.x", -1)
        out.append([bits(t.numpy()) for t in got])
        f("vm.builtin.tensor_cache.clear")()
    return out


def main():
    mode, path = sys.argv[1], sys.argv[2]
    apache_tests()
    rng = np.random.default_rng(20261129)
    results = {
        "samplers": sampler_cases(rng),
        "multinomial": multinomial_cases(rng),
        "in_place": in_place_cases(rng),
        "kv_cache": kv_cache_cases(rng),
        "rnn_state": rnn_state_cases(rng),
        "rnn_state_kernels": rnn_state_with_kernels(tvm.cpu(), rng),
        "tensor_cache": tensor_cache_cases(rng),
    }
    if mode == "check" and tvm.opencl().exist:
        # The wheel's runtime has no OpenCL: on this runtime only, against the test's values
        # and the CPU's.
        rnn_state_with_kernels(tvm.opencl())
        assert tensor_cache_cases(np.random.default_rng(1), tvm.opencl()) == tensor_cache_cases(np.random.default_rng(1))
        print("  tensor cache onto opencl:0: the CPU's values")
    if mode == "record":
        with open(path, "w") as out:
            json.dump(results, out)
        print(f"  recorded {sum(map(len, results.values()))} results")
        return
    with open(path) as recorded:
        expected = json.load(recorded)
    bad = 0
    for group, values in results.items():
        want = expected[group]
        wrong = [i for i, (a, b) in enumerate(zip(values, want)) if a != b]
        bad += len(wrong) + abs(len(values) - len(want))
        print(f"  {group}: {len(values) - len(wrong)} of {len(want)} as on the wheel's runtime")
        for i in wrong[:5]:
            print(f"    case {i}: ours {values[i]!r:.200} wheel {want[i]!r:.200}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
