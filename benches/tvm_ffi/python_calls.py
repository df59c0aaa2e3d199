"""Per-call cost of tvm-ffi's Python package on whichever libtvm_ffi.so the process loaded.

Run by benches/tvm_ffi/python_bench.sh, once on the wheel's own library and once with this
runtime's libtvm_ffi.so in its place (`tvm-rt ffi-swap`), alternating, and compared there.
Prints one JSON object: nanoseconds per call for each case (best of 5 batches).
"""

import json
import sys
import time

import numpy as np
import tvm_ffi
import tvm_ffi.testing  # noqa: F401  (loads the testing library: testing.nop, a C++ function)


def per_call(fn, n):
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    nop = tvm_ffi.get_global_func("testing.nop")  # C++, called through its cell
    echo = tvm_ffi.get_global_func("testing.echo")
    array_size = tvm_ffi.get_global_func("ffi.ArraySize")  # the library's own global
    arr = tvm_ffi.Array([1, 2, 3])
    x = np.zeros((4,), dtype="float32")
    t = tvm_ffi.from_dlpack(x)
    m = tvm_ffi.Map({"a": 1, "b": 2})
    d = tvm_ffi.Dict({"a": 1})
    lst = tvm_ffi.List([1, 2, 3])
    cases = {
        "call C++ nop()": lambda: nop(),
        "call C++ echo(int)": lambda: echo(1),
        "call library global ffi.ArraySize(array)": lambda: array_size(arr),
        "Array([1, 2, 3])": lambda: tvm_ffi.Array([1, 2, 3]),
        "Map({'a': 1})": lambda: tvm_ffi.Map({"a": 1}),
        "from_dlpack(numpy)": lambda: tvm_ffi.from_dlpack(x),
        "numpy.from_dlpack(tensor)": lambda: np.from_dlpack(t),
        "map['b']": lambda: m["b"],
        "'a' in map": lambda: "a" in m,
        "dict['a'] = 2": lambda: d.__setitem__("a", 2),
        "list[1]": lambda: lst[1],
        "list.append(4); list.pop()": lambda: (lst.append(4), lst.pop()),
        "List([1, 2, 3])": lambda: tvm_ffi.List([1, 2, 3]),
        "list(map.items())": lambda: list(m.items()),
    }
    print(json.dumps({name: per_call(fn, n) for name, fn in cases.items()}))


if __name__ == "__main__":
    main()
