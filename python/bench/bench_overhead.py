"""Python overhead of tvmrt, and thread scaling.

    cargo build --release && cargo run --release --example python_fixtures
    python python/bench/bench_overhead.py [--iters N] [--rounds R]

1. ``set_input + run + get_output`` of a tiny model (``target/demo/tiny_model.so``: a [1, 1, 2, 2]
   input, dense(2) + softmax) in a Python loop, against the same loop in Rust calling the C API
   (``target/release/examples/python_fixtures --bench N``). The difference is what Python and
   ctypes add per iteration (goal: <= 5 us).
2. Throughput (runs/s) with 2 Python threads (each its own executor, one intra-op thread)
   against 1 thread, on the demo model (~30 us per run) and on the large CNN (``cnn_model.so``,
   tens of ms per run): ctypes releases the GIL during every runtime call. The cores the process
   got (CPU time over wall time) are printed with them: on a shared machine they bound the ratio.

Each loop figure is the median of 3 interleaved runs of 5 samples each (their medians), the
throughputs the median of 3 samples; ``--rounds`` repeats the whole measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

import tvmrt

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


def median_of(samples):
    return statistics.median(samples)


def python_loop(path: str, iters: int, variant: str) -> float:
    lib = tvmrt.load_module(path)
    m = lib["default"](tvmrt.cpu(0))
    x = np.full((1, 1, 2, 2), 0.25, dtype=np.float32)
    out = np.empty((1, 2), dtype=np.float32)

    def body_index():
        for _ in range(iters):
            m.set_input(0, x)
            m.run()
            m.get_output(0, out)

    def body_name():
        for _ in range(iters):
            m.set_input("data", x)
            m.run()
            m.get_output(0).numpy()

    body = body_index if variant == "index" else body_name
    body()  # warm-up
    samples = []
    for _ in range(5):
        t = time.perf_counter()
        body()
        samples.append((time.perf_counter() - t) * 1e6 / iters)
    m.free()
    return median_of(samples)


def c_loop(iters: int) -> float:
    exe = TARGET / "release" / "examples" / "python_fixtures"
    if not exe.is_file():
        raise SystemExit(f"{exe} missing: run `cargo run --release --example python_fixtures` first")
    r = subprocess.run([str(exe), "--bench", str(iters)], capture_output=True, text=True, check=True)
    return float(r.stdout.strip().splitlines()[-1])


def throughput(path: str, threads: int, seconds: float) -> float:
    lib = tvmrt.load_module(path)
    mods = [lib["default"](tvmrt.cpu(0), options="intra_op_threads=1") for _ in range(threads)]
    (inp,) = mods[0].data_inputs()
    (outp,) = mods[0].outputs()
    x = np.random.default_rng(0).random(inp.shape).astype(inp.dtype)
    counts = [0] * threads
    stop = threading.Event()
    start = threading.Barrier(threads + 1)

    def work(k: int) -> None:
        m = mods[k]
        out = np.empty(outp.shape, dtype=outp.dtype)
        start.wait()
        n = 0
        while not stop.is_set():
            m.set_input(0, x)
            m.run()
            m.get_output(0, out)
            n += 1
        counts[k] = n

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    c0 = os.times()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join()
    elapsed = time.perf_counter() - t0
    c1 = os.times()
    for m in mods:
        m.free()
    cpu = (c1.user - c0.user + c1.system - c0.system) / elapsed
    return sum(counts) / elapsed, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=1.0, help="per throughput sample")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    fx = TARGET / "demo" / "python_fixtures.json"
    if not fx.is_file():
        raise SystemExit(f"{fx} missing: run `cargo run --release --example python_fixtures` first")
    paths = json.loads(fx.read_text())
    rows = []
    for r in range(args.rounds):
        # C and Python interleaved, 3 times each (each already a median of 5 samples)
        cs, pys = [], []
        for _ in range(3):
            cs.append(c_loop(args.iters))
            pys.append(python_loop(paths["tiny"], args.iters, "index"))
        c, py = median_of(cs), median_of(pys)
        py_name = python_loop(paths["tiny"], args.iters // 2, "name")
        s1 = sorted(throughput(paths["demo"], 1, args.seconds) for _ in range(3))
        s2 = sorted(throughput(paths["demo"], 2, args.seconds) for _ in range(3))
        (t1, cpu1), (t2, cpu2) = s1[1], s2[1]
        (l1, lcpu1), (l2, lcpu2) = throughput(paths["large"], 1, 2 * args.seconds), throughput(
            paths["large"], 2, 2 * args.seconds
        )
        row = {
            "c_loop_us": c,
            "python_loop_us": py,
            "overhead_us": py - c,
            "python_by_name_new_output_us": py_name,
            "overhead_by_name_us": py_name - c,
            "demo_runs_per_s_1_thread": t1,
            "demo_runs_per_s_2_threads": t2,
            "thread_ratio": t2 / t1,
            "cpu_cores_used_1_thread": cpu1,
            "cpu_cores_used_2_threads": cpu2,
            "large_runs_per_s_1_thread": l1,
            "large_runs_per_s_2_threads": l2,
            "large_thread_ratio": l2 / l1,
            "large_cpu_cores_used": [lcpu1, lcpu2],
            "load_average_1min": os.getloadavg()[0],
        }
        rows.append(row)
        if not args.json:
            print(
                f"round {r + 1}: set_input+run+get_output on the tiny model: C API loop {c:.2f} us, "
                f"Python {py:.2f} us -> overhead {py - c:.2f} us (goal <= 5 us; by name with a new "
                f"output NDArray: {py_name:.2f} us, overhead {py_name - c:.2f} us); demo throughput "
                f"1 thread {t1:,.0f} runs/s, 2 threads {t2:,.0f} runs/s, ratio {t2 / t1:.2f} (CPU cores used: "
                f"{cpu1:.2f} / {cpu2:.2f}); large CNN 1 thread {l1:.1f} runs/s, 2 threads {l2:.1f} runs/s, ratio "
                f"{l2 / l1:.2f} (cores used {lcpu1:.2f} / {lcpu2:.2f}); load average {os.getloadavg()[0]:.1f}"
            )
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
