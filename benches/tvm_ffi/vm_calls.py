"""Per-call cost of a Relax VM function called through apache-tvm 0.27's own Python
(`relax.VirtualMachine`), on whichever libraries the process loaded.

Run by benches/tvm_ffi/vm_bench.sh: on the wheel's libraries, with this runtime's libtvm_ffi.so
under the wheel's runtime, and (runtime-only, TVM_USE_RUNTIME_LIB=1) with this runtime as both.
Overhead-bound models of tests/data/relax-0.27 (one small kernel, a tuple, two functions).
Prints one JSON object: nanoseconds per call for each case (best of 5 batches). Run from the root
of the checkout.
"""

import json
import sys
import time

import numpy as np
import tvm
from tvm.runtime.vm import VirtualMachine  # tvm.relax.VirtualMachine, importable runtime-only too

DATA = "tests/data/relax-0.27"


def per_call(fn, n):
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def case(model, n):
    manifest = json.load(open(f"{DATA}/manifest.json"))["models"][model]
    vm = VirtualMachine(tvm.runtime.load_module(f"{DATA}/{manifest['lib']}"), tvm.cpu())
    c = manifest["cases"][0]
    args = [
        tvm.runtime.tensor(np.fromfile(f"{DATA}/{model}/{i['file']}", dtype=i["dtype"]).reshape(i["shape"]))
        for i in c["inputs"]
    ]
    f = vm[c["func"]]
    return per_call(lambda: f(*args), n)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(json.dumps({f"vm {m} main": case(m, n) for m in ["one_kernel", "tuple", "mlp"]}))


if __name__ == "__main__":
    main()
