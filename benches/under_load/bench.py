"""The demo model's run time with the machine idle and with one busy process beside it, on this
runtime and on TVM 0.18's, through the same program: TVM 0.18's own Python (runtime only) over
either libtvm_runtime.so, timing ``run`` with TVM's ``time_evaluator``. Kernel threads: the
default (unset), 1 and 2 (``TVM_NUM_THREADS``). Alternating rounds, medians.

    bash scripts/tvm018_host.sh && source target/tvm-0.18/env.sh
    cargo build --release && cargo run --release --example demo
    python3 benches/under_load/bench.py [--rounds 3]

Target (issue: one execution core): with one busy process beside it, the default is no slower
than the better of 1 and 2 threads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHILD = r"""
import sys, tvm
from tvm.contrib import graph_executor
import numpy as np
lib = tvm.runtime.load_module(sys.argv[1])
m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
m.set_input("data", np.full((1, 1, 16, 16), 0.5, "float32"))
t = m.module.time_evaluator("run", tvm.cpu(), number=200, repeat=15, min_repeat_ms=0)()
print(1e6 * float(np.median(t.results)))
"""
THREADS = {"default": None, "1 thread": "1", "2 threads": "2"}


def run_us(lib_dir: Path, threads, model: Path) -> float:
    env = dict(os.environ, TVM_LIBRARY_PATH=str(lib_dir), TVM_USE_RUNTIME_LIB="1")
    env.pop("TVM_NUM_THREADS", None)
    if threads:
        env["TVM_NUM_THREADS"] = threads
    python = os.environ.get("TVM018_PYTHON", sys.executable)
    r = subprocess.run([python, "-c", CHILD, str(model)], env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return float(r.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tvm_dir = Path(os.environ.get("TVM_LIBRARY_PATH_018", REPO / "target/tvm-0.18/build"))
    runtimes = {"ours": REPO / "target/release", "TVM 0.18": tvm_dir}
    model = REPO / "target/demo/demo_model.so"
    for d in runtimes.values():
        if not (d / "libtvm_runtime.so").exists():
            sys.exit(f"{d}/libtvm_runtime.so is missing (see the docstring)")
    times = {}
    for _ in range(a.rounds):
        for load in ("idle", "one busy process"):
            busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load != "idle" else None
            try:
                for rt, d in runtimes.items():
                    for label, n in THREADS.items():
                        times.setdefault((load, rt, label), []).append(run_us(d, n, model))
            finally:
                if busy:
                    busy.kill()
                    busy.wait()
    print(f"cores: {os.cpu_count()}, {a.rounds} rounds; demo model, median run in us (TVM's time_evaluator)")
    for load in ("idle", "one busy process"):
        for rt in runtimes:
            row = {label: statistics.median(times[(load, rt, label)]) for label in THREADS}
            best = min(row["1 thread"], row["2 threads"])
            verdict = f"default / best of 1 and 2: {row['default'] / best:.2f}"
            print(f"{load:17} {rt:9} " + "  ".join(f"{k} {v:7.1f}" for k, v in row.items()) + f"   {verdict}")
    for load in ("idle", "one busy process"):
        ours, theirs = times[(load, "ours", "default")], times[(load, "TVM 0.18", "default")]
        print(f"{load}: ours / TVM 0.18 at the default: {statistics.median(ours) / statistics.median(theirs):.2f}")


if __name__ == "__main__":
    main()
