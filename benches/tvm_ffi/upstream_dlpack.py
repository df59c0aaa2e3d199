"""tvm-ffi's own DLPack benchmark (its sdist's tests/scripts/benchmark_dlpack.py), the cases
that need no torch or GPU, on whichever libtvm_ffi.so the process loaded:

    python upstream_dlpack.py BENCHMARK_DLPACK_PY [REPEAT]

Run by benches/tvm_ffi/python_bench.sh beside python_calls.py. The cases are the script's own
functions, run as it runs them (each times REPEAT calls and prints seconds per call); this
file only picks them, runs each five times and prints one JSON object, nanoseconds per call,
the best of the five. Without torch installed, the script's `import torch` gets an empty module
so that it loads (after tvm_ffi, which looks for torch as it loads): none of the cases run here
touches it.
"""

import contextlib
import importlib.util
import io
import json
import sys
import types


def load(path):
    import tvm_ffi  # noqa: F401  (first: it looks for torch as it loads)
    import tvm_ffi.testing  # noqa: F401  (the testing library: testing.nop, a C++ function)

    try:
        import torch  # noqa: F401
    except ImportError:
        sys.modules["torch"] = types.ModuleType("torch")
    spec = importlib.util.spec_from_file_location("benchmark_dlpack", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seconds_per_call(run):
    """Run one case of the script; its one printed line ends in `<seconds> sec/call`."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run()
    line = out.getvalue().strip().splitlines()[-1]
    return line.rsplit(maxsplit=2)[0], float(line.split()[-2])


def main():
    bench = load(sys.argv[1])
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    import numpy as np

    cases = [
        lambda: bench.tvm_ffi_nop_from_numpy_dlpack(repeat),
        lambda: bench.tvm_ffi_nop_autodlpack_from_numpy(repeat),
        lambda: bench.bench_to_dlpack(bench.tvm_ffi.from_dlpack(np.arange(1)), "tvm.__dlpack__", repeat),
        lambda: bench.bench_to_dlpack_versioned(
            bench.tvm_ffi.from_dlpack(np.arange(1)), "tvm.__dlpack__(max_version=(1,1))", repeat
        ),
    ]
    result = {}
    for case in cases:
        runs = [seconds_per_call(case) for _ in range(5)]
        result[f"upstream: {runs[0][0]}"] = min(s for _, s in runs) * 1e9
    print(json.dumps(result))


if __name__ == "__main__":
    main()
