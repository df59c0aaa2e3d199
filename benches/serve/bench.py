"""The serving bench: ``python -m tvmrt.serve`` started for real, loaded by tritonclient over HTTP
(binary) from its own process (benches/serve/load.py in the client venv), side by side in one
run, alternating rounds, medians.

    bash scripts/serve_tests.sh -k nothing          # makes the two venvs (target/serve-venv, target/serve-client-venv)
    cargo run --release --example python_fixtures -- --wide
    target/serve-venv/bin/python benches/serve/bench.py [--rounds 3] [--seconds 5] [--only overhead,batching,replicas]

- overhead: the tiny model at concurrency 1, p50 of an HTTP binary request minus p50 of the same
  set_input + run + get_output in-process through ``tvmrt`` (target <= 1 ms); at concurrency 64,
  errors and p99.
- batching: the wide model's bucket set (batch 1, 2, 4, 8; 8 MB of weights: a batch of 8 costs
  about one run) at concurrency 8, requests/s with batching against ``--no-batching``
  (target >= 1.5).
- replicas: the CNN (~30 ms a run, one kernel thread) on a two-node Ray cluster on this machine
  (one CPU each), ``--replicas 2 --max-replicas-per-node 1`` against ``--replicas 1``, at
  concurrency 4 (target >= 1.6).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python/serve_tests"))
import harness  # noqa: E402
import raycluster  # noqa: E402

CLIENT = REPO / "target/serve-client-venv/bin/python"
DEMO = REPO / "target/demo"


def start(models, *args, env=None):
    log = Path(tempfile.mkdtemp(prefix="tvmrt-serve-bench-")) / "server.log"
    return harness.start_server(*sum((["--model", m] for m in models), []), *args, env=env, log=log, timeout=180)


def stop(p):
    p.terminate()
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def load(port, model, shape, concurrency, seconds):
    job = {"port": port, "model": model, "input_name": "data", "shape": shape, "datatype": "FP32",
           "dtype": "float32", "concurrency": concurrency, "seconds": seconds}
    r = subprocess.run([str(CLIENT), str(Path(__file__).with_name("load.py"))], input=json.dumps(job),
                       capture_output=True, text=True, timeout=seconds + 300)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    return json.loads(r.stdout)


def cpu_s(pid: int) -> float:
    """CPU seconds a process has used (user + system)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(port, p, model, shape, concurrency, seconds, replica_pids=()):
    """`load`, with the CPU the server (front end) and the replicas used, per request in ms."""
    pids = [p.pid, *replica_pids]
    before = [cpu_s(q) for q in pids]
    r = load(port, model, shape, concurrency, seconds)
    used = [cpu_s(q) - b for q, b in zip(pids, before)]
    n = max(r["requests"], 1)
    r["cpu_ms"] = {"front end": 1e3 * used[0] / n, "replicas": 1e3 * sum(used[1:]) / n, "client": 1e3 * r["client_cpu_s"] / n}
    return r


def in_process_p50_ms(path, shape, n=2000):
    import tvmrt

    m = tvmrt.load_module(path)["default"](tvmrt.cpu())
    x = np.random.RandomState(0).uniform(-1, 1, shape).astype("float32")
    out = tvmrt.empty(m.get_output(0).shape, "float32")
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        m.set_input(0, x)
        m.run()
        m.get_output(0, out)
        ts.append(time.perf_counter() - t)
    return 1e3 * statistics.median(ts)


def overhead(a):
    tiny = str(DEMO / "tiny_model.so")
    local = in_process_p50_ms(tiny, [1, 1, 2, 2])
    port, p = start([f"tiny={tiny}"])
    try:
        rows = [load(port, "tiny", [1, 1, 2, 2], 1, a.seconds) for _ in range(a.rounds)]
        wide = load(port, "tiny", [1, 1, 2, 2], 64, a.seconds)
    finally:
        stop(p)
    p50 = statistics.median(r["p50_ms"] for r in rows)
    print(f"overhead: tiny model, concurrency 1: HTTP binary p50 {p50:.3f} ms, in-process {local:.4f} ms, "
          f"overhead {p50 - local:.3f} ms (target <= 1 ms: {'met' if p50 - local <= 1 else 'MISSED'}); "
          f"rounds {[round(r['p50_ms'], 3) for r in rows]}")
    print(f"overhead: tiny model, concurrency 64: {wide['rps']:.0f} requests/s, p50 {wide['p50_ms']:.2f} ms, "
          f"p99 {wide['p99_ms']:.2f} ms, {wide['errors']} errors of {wide['requests'] + wide['errors']}")


def batching(a):
    manifest = DEMO / "wide.buckets"
    if not manifest.exists():
        sys.exit(f"{manifest} is missing: cargo run --release --example python_fixtures -- --wide")
    on, off = [], []
    for _ in range(a.rounds):
        for flags, into in (((), on), (("--no-batching",), off)):
            port, p = start([f"wide={manifest}"], *flags)
            try:
                into.append(load(port, "wide", [1, 1, 64, 64], 8, a.seconds))
            finally:
                stop(p)
    r_on, r_off = statistics.median(r["rps"] for r in on), statistics.median(r["rps"] for r in off)
    print(f"batching: wide model buckets, concurrency 8: batching {r_on:.0f} requests/s (p99 "
          f"{statistics.median(r['p99_ms'] for r in on):.1f} ms), no batching {r_off:.0f} requests/s (p99 "
          f"{statistics.median(r['p99_ms'] for r in off):.1f} ms), ratio {r_on / r_off:.2f} "
          f"(target >= 1.5: {'met' if r_on / r_off >= 1.5 else 'MISSED'}); rounds {[round(r['rps']) for r in on]} / "
          f"{[round(r['rps']) for r in off]}")


def replicas(a):
    cnn = DEMO / "cnn_model.so"
    two, one = [], []
    with raycluster.two_nodes() as (address, env):
        env = dict(env, TVM_NUM_THREADS="1")
        for _ in range(a.rounds):
            for n, into in ((2, two), (1, one)):
                port, p = start([f"cnn={cnn}"], "--ray-address", address, "--replicas", str(n),
                                "--max-replicas-per-node", "1", env=env)
                try:
                    warm = load(port, "cnn", [1, 3, 64, 64], 4, 1.0)
                    pids = sorted({int(s.split("/")[1]) for s in warm["served_by"]})
                    into.append(measured(port, p, "cnn", [1, 3, 64, 64], 4, a.seconds, pids))
                finally:
                    stop(p)
    r2, r1 = statistics.median(r["rps"] for r in two), statistics.median(r["rps"] for r in one)
    nodes = sorted({s.split("/")[0] for r in two for s in r["served_by"]})
    print(f"replicas: CNN on a two-node Ray cluster, concurrency 4: 2 replicas {r2:.1f} requests/s (nodes {nodes}), "
          f"1 replica {r1:.1f} requests/s, ratio {r2 / r1:.2f} (target >= 1.6: {'met' if r2 / r1 >= 1.6 else 'MISSED'}); "
          f"rounds {[round(r['rps'], 1) for r in two]} / {[round(r['rps'], 1) for r in one]}")
    for label, rows in (("2 replicas", two), ("1 replica", one)):
        cpu = {k: statistics.median(r["cpu_ms"][k] for r in rows) for k in rows[0]["cpu_ms"]}
        print(f"replicas: CPU per request, {label}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in cpu.items())
              + f"; total {sum(cpu.values()):.1f} ms of {os.cpu_count()} cores")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--only", default="overhead,batching,replicas")
    a = ap.parse_args()
    print(f"cores: {os.cpu_count()}, rounds {a.rounds}, {a.seconds} s each; medians")
    for name in a.only.split(","):
        {"overhead": overhead, "batching": batching, "replicas": replicas}[name](a)


if __name__ == "__main__":
    main()
