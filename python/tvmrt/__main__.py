"""``python -m tvmrt MODEL.so``: print a model's inputs and outputs and run it once on random
data (``--runs N`` times it; ``--seed`` picks the data)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import List, Optional

import numpy as np

from . import TVMError, cpu, library_path, load_module


def _random(shape, dtype: str, rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.random(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    return rng.integers(0, 10, shape).astype(dt)


def _vm_main(lib, args) -> int:
    """A Relax VM library: its functions, then `main` once on random data (when its shapes are
    fixed) and timed."""
    from .relax import VirtualMachine

    vm = VirtualMachine(lib, cpu(0))
    desc = vm.describe()
    print(f"model: {args.model}  (Relax VM, {desc['format']}; runtime: {library_path})")
    for f in desc["functions"]:
        params = ", ".join(f"{p['name']}: {p['dtype']} {p['shape']}" for p in f["params"])
        print(f"  {f['name']}({params})")
    main_fn = next((f for f in desc["functions"] if f["name"] == "main"), None)
    fixed = main_fn is not None and all(
        p["dtype"] and p["shape"] is not None and all(isinstance(d, int) for d in p["shape"]) for p in main_fn["params"]
    )
    if not fixed:
        print("\nmain has symbolic or unknown shapes: not run (call it with tvmrt.relax.VirtualMachine)")
        return 0
    rng = np.random.default_rng(args.seed)
    inputs = [_random(tuple(p["shape"]), p["dtype"], rng) for p in main_fn["params"]]
    t0 = time.perf_counter()
    out = vm["main"](*inputs)
    print(f"\nmain on random data (seed {args.seed}): {(time.perf_counter() - t0) * 1e3:.3f} ms")
    for i, y in enumerate(out if isinstance(out, list) else [out]):
        flat = y.numpy().reshape(-1)
        print(f"  output {i} {list(y.shape)} {y.dtype}: {np.array2string(flat[:8], precision=4, separator=', ')}")
    if args.runs > 1:
        r = vm.time_evaluator("main", cpu(0), number=1, repeat=args.runs)(*inputs)
        print(f"\n{args.runs} runs: median {r.median * 1e3:.3f} ms, mean {r.mean * 1e3:.3f} ms, std {r.std * 1e3:.3f} ms")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tvmrt", description=__doc__)
    ap.add_argument("model", help="an export_library .so (a GraphExecutorFactory module or a Relax VM executable)")
    ap.add_argument("--runs", type=int, default=1, help="runs to time after the first (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    ap.add_argument("--options", default=None, help='executor options, "key=value,..."')
    args = ap.parse_args(argv)
    try:
        lib = load_module(args.model)
        if lib.is_vm_executable():
            return _vm_main(lib, args)
        g = lib["default"](cpu(0), options=args.options)
        inputs = g.inputs()
        data = [t for t in inputs if not t.is_param]
        print(f"model: {args.model}  (runtime: {library_path})")
        print(f"\ninputs: {len(data)} data, {len(inputs) - len(data)} params")
        for t in inputs:
            kind = "param" if t.is_param else "data"
            print(f"  {t.index:3d}  {t.name:<24} {str(list(t.shape)):<18} {t.dtype:<8} {t.nbytes:>10,} B  {kind}")
        outs = g.outputs()
        print(f"\noutputs: {len(outs)}")
        for t in outs:
            print(f"  {t.index:3d}  {t.name:<32} {str(list(t.shape)):<18} {t.dtype:<8} {t.nbytes:>10,} B")
        rng = np.random.default_rng(args.seed)
        for t in data:
            g.set_input(t.index, _random(t.shape, t.dtype, rng))
        t0 = time.perf_counter()
        g.run()
        first = time.perf_counter() - t0
        print(f"\none run on random data (seed {args.seed}): {first * 1e3:.3f} ms")
        for t in outs:
            y = g.get_output(t.index).numpy()
            flat = y.reshape(-1)
            head = np.array2string(flat[:8], precision=4, separator=", ")
            more = " ..." if flat.size > 8 else ""
            print(f"  {t.name}: {head}{more}")
            if y.dtype.kind == "f" and flat.size:
                print(f"    min {flat.min():.4g}  max {flat.max():.4g}  mean {flat.mean():.4g}  argmax {int(flat.argmax())}")
        if args.runs > 1:
            r = g.benchmark(repeat=args.runs, number=1)
            print(f"\n{args.runs} runs: median {r.median * 1e3:.3f} ms, mean {r.mean * 1e3:.3f} ms, std {r.std * 1e3:.3f} ms")
        g.free()
        lib.free()
    except TVMError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
