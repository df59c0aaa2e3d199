"""tvm-ffi's containers and structural functions at scale, through its Python package: the cost
of one operation (ns) at each size N, as JSON {"case@N": ns}. benches/tvm_ffi/scale_bench.sh
runs it on the real libtvm_ffi.so and on this runtime's, alternating, and prints the ratios.

    python benches/tvm_ffi/scale.py [N ...]      # default 10 1000 10000 100000
"""
import json
import sys
import time

from typing import Optional

import tvm_ffi
from tvm_ffi import serialization
from tvm_ffi.dataclasses import py_class


@py_class("bench.Node", structural_eq="tree")
class Node(tvm_ffi.Object):
    """A record as a compiler's IR has them: plain fields, a name, a child."""

    value: int
    name: str
    child: Optional[tvm_ffi.Object]


def per_op(fn, n, budget_s=0.3):
    """Best of up to 5 timed runs of fn() (which does n operations), in ns per operation;
    fewer runs once the budget is spent."""
    best, spent = float("inf"), 0.0
    for _ in range(5):
        t0 = time.perf_counter_ns()
        fn()
        dt = time.perf_counter_ns() - t0
        best, spent = min(best, dt / n), spent + dt / 1e9
        if spent > budget_s:
            break
    return best


def cases(n):
    keys = [f"param_{i}" for i in range(n)]
    miss = [f"absent_{i}" for i in range(n)]
    pairs = dict(zip(keys, range(n)))
    smap = tvm_ffi.Map(pairs)
    imap = tvm_ffi.Map({i * 7919: i for i in range(n)})
    arr = tvm_ffi.Array(list(range(n)))
    arr2 = tvm_ffi.Array(list(range(n)))
    deep = tvm_ffi.Array([])
    for i in range(min(n, 2000)):
        deep = tvm_ffi.Array([deep, i])
    nested = tvm_ffi.Map({k: tvm_ffi.Array([i, k]) for i, k in enumerate(keys)})
    records = tvm_ffi.Array([Node(i, k, None) for i, k in enumerate(keys)])
    records2 = tvm_ffi.Array([Node(i, k, None) for i, k in enumerate(keys)])

    def dict_set_erase():
        d = tvm_ffi.Dict()
        for k in keys:
            d[k] = 1
        for k in keys:
            del d[k]

    def list_append_pop():
        lst = tvm_ffi.List()
        for i in range(n):
            lst.append(i)
        for _ in range(n):
            lst.pop()

    yield "map build from dict", lambda: tvm_ffi.Map(pairs), n
    yield "map[str] hit", lambda: [smap[k] for k in keys], n
    yield "str in map (miss)", lambda: [k in smap for k in miss], n
    yield "map[int] hit", lambda: [imap[i * 7919] for i in range(n)], n
    yield "dict set+erase", dict_set_erase, 2 * n
    yield "list append+pop", list_append_pop, 2 * n
    yield "array build", lambda: tvm_ffi.Array(list(range(n))), n
    yield "array index", lambda: [arr[i] for i in range(n)], n
    yield "array iterate", lambda: [x for x in arr], n
    yield "structural_hash array", lambda: tvm_ffi.structural_hash(arr), n
    yield "structural_equal array", lambda: tvm_ffi.structural_equal(arr, arr2), n
    yield "structural_hash map", lambda: tvm_ffi.structural_hash(nested), n
    yield "deep_copy map", lambda: tvm_ffi.get_global_func("ffi.DeepCopy")(nested), n
    yield "json round trip map", lambda: serialization.from_json_graph_str(serialization.to_json_graph_str(nested)), n
    yield "structural_hash deep", lambda: tvm_ffi.structural_hash(deep), min(n, 2000)
    yield "structural_hash records", lambda: tvm_ffi.structural_hash(records), n
    yield "structural_equal records", lambda: tvm_ffi.structural_equal(records, records2), n
    yield "deep_copy records", lambda: tvm_ffi.get_global_func("ffi.DeepCopy")(records), n


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [10, 1000, 10000, 100000]
    out = {}
    for n in sizes:
        for name, fn, ops in cases(n):
            out[f"{name}@{n}"] = per_op(fn, ops)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
