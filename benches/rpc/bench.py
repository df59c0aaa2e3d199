"""RPC server against TVM 0.18's own (apps/cpp_rpc), side by side on one machine, from a real TVM
0.18 host: a tiny remote call's round trip, upload throughput, and time_evaluator of the demo
model remotely against the same runtime timing it in-process. Medians of alternating rounds.

    scripts/tvm018_host.sh && source target/tvm-0.18/env.sh
    cargo build --release && cargo run --release --example python_fixtures
    $TVM018_PYTHON benches/rpc/bench.py [--rounds 3]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import numpy as np
import tvm
from tvm import rpc
from tvm.contrib import graph_executor

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = json.load(open(os.path.join(REPO, "target/demo/python_fixtures.json")))["demo"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(side, port):
    if side == "ours":
        cmd = [os.path.join(REPO, "target/release/tvm-rt"), "rpc-server", "--host", "127.0.0.1", "--port", str(port)]
    else:
        cmd = [os.environ["TVM018_RPC_SERVER"], "server", "--host=127.0.0.1", f"--port={port}", f"--port-end={port + 1}"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            time.sleep(0.2)
            return p
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{side} server did not start")


def measure(port):
    r = rpc.connect("127.0.0.1", port)
    r.upload(MODEL)
    dev = r.cpu(0)
    m = graph_executor.GraphModule(r.load_module(os.path.basename(MODEL))["default"](dev))
    f = m.module["get_num_outputs"]
    for _ in range(200):
        f()
    n = 2000
    t = time.perf_counter()
    for _ in range(n):
        f()
    call_us = (time.perf_counter() - t) / n * 1e6
    blob = bytearray(os.urandom(32 << 20))
    t = time.perf_counter()
    r.upload(blob, target="blob.bin")
    upload_mbs = len(blob) / (time.perf_counter() - t) / 1e6
    m.module.time_evaluator("run", dev, number=500, repeat=1)()  # warm the workers
    remote = m.module.time_evaluator("run", dev, number=500, repeat=5)().median * 1e6
    return call_us, upload_mbs, remote


def local_run_us(side):
    """The same model timed in-process by the same runtime the server uses."""
    code = (
        "import sys, json; sys.path.insert(0, %r)\n" % os.path.join(REPO, "python")
        + "import tvmrt\nlib = tvmrt.load_module(%r)\n" % MODEL
        + "m = tvmrt.GraphModule(lib['default'](tvmrt.cpu()))\n"
        + "m.benchmark(tvmrt.cpu(), number=500, repeat=1)\n"
        + "print(m.benchmark(tvmrt.cpu(), number=500, repeat=5).median * 1e6)\n"
    )
    if side == "ours":
        env = dict(os.environ, TVM_RUNTIME_LIBRARY=os.path.join(REPO, "target/release/libtvm_runtime.so"))
        return float(subprocess.check_output([sys.executable, "-c", code], env=env, text=True).split()[-1])
    m = graph_executor.GraphModule(tvm.runtime.load_module(MODEL)["default"](tvm.cpu()))
    m.module.time_evaluator("run", tvm.cpu(), number=500, repeat=1)()
    return m.module.time_evaluator("run", tvm.cpu(), number=500, repeat=5)().median * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    rows = {"ours": [], "cpp_rpc": []}
    for i in range(a.rounds):
        for side in (("ours", "cpp_rpc") if i % 2 == 0 else ("cpp_rpc", "ours")):
            port = free_port()
            p = start(side, port)
            try:
                rows[side].append(measure(port) + (local_run_us(side),))
            finally:
                p.terminate()
                p.wait()
    med = {s: [statistics.median(col) for col in zip(*v)] for s, v in rows.items()}
    print(f"rpc bench: {a.rounds} alternating rounds, medians; loopback; a TVM 0.18 Python host")
    print(f"{'server':<10} {'call us':>9} {'upload MB/s':>12} {'remote run us':>14} {'local run us':>13} {'remote/local':>13}")
    for s, (call, up, remote, local) in med.items():
        print(f"{s:<10} {call:>9.1f} {up:>12.0f} {remote:>14.1f} {local:>13.1f} {remote / local:>13.3f}")
    o, t = med["ours"], med["cpp_rpc"]
    print(f"ours / cpp_rpc: call {o[0] / t[0]:.2f}x (goal <= 1.0), upload {o[1] / t[1]:.2f}x (goal >= 1.0)")


if __name__ == "__main__":
    main()
