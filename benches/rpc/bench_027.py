"""RPC server against apache-tvm 0.27's own (`python -m tvm.exec.rpc_server`), side by side on one
machine, from a real apache-tvm 0.27 host: a tiny remote call's round trip and upload throughput
(both servers up, one session each, taking turns block by block), and time_evaluator of a relax-0.27 model (mlp by default) through the remote Relax VM against the same runtime
timing it in-process (ours: `tvm-rt bench`, the mean of as many runs; 0.27: the host's own TVM,
its time_evaluator on the local CPU). Each server is started fresh for each of the alternating rounds; medians.

    cargo build --release -p tvm-runtime
    bash scripts/rpc_027_host.sh          # makes target/tvm027-venv once
    target/tvm027-venv/bin/python benches/rpc/bench_027.py [--rounds 3] [--model mlp|cnn]
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
from tvm import relax, rpc

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tests/data/relax-0.27")
MLP = X = None  # the model's library and input (--model)
NUMBER, REPEAT = 500, 5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(side, port):
    if side == "ours":
        cmd = [os.path.join(REPO, "target/release/tvm-rt"), "rpc-server", "--host", "127.0.0.1", "--port", str(port)]
    else:
        cmd = [sys.executable, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(port),
               "--port-end", str(port + 1)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            time.sleep(0.5)
            return p
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{side} server did not start")


def session(port):
    """A session with the model loaded: (remote, its device, the VM)."""
    r = rpc.connect("127.0.0.1", port)
    r.upload(MLP, target="model.so")
    dev = r.cpu()
    return r, dev, relax.VirtualMachine(r.load_module("model.so"), dev)


def interleaved(sessions, blocks):
    """Per side: the median over `blocks` of a 200-call block's mean round trip (us) and of a 4 MB
    upload's throughput (MB/s); the sides take turns block by block, so load from elsewhere hits
    both alike."""
    calls = {s: [] for s in sessions}
    uploads = {s: [] for s in sessions}
    blob = bytearray(os.urandom(4 << 20))
    fns = {s: vm.module["get_function_arity"] for s, (_, _, vm) in sessions.items()}
    for f in fns.values():
        for _ in range(200):
            f("main")
    for b in range(blocks):
        for side in sorted(sessions, reverse=b % 2 == 1):
            f = fns[side]
            t = time.perf_counter()
            for _ in range(200):
                f("main")
            calls[side].append((time.perf_counter() - t) / 200 * 1e6)
            t = time.perf_counter()
            sessions[side][0].upload(blob, target="blob.bin")
            uploads[side].append(len(blob) / (time.perf_counter() - t) / 1e6)
    return {s: (statistics.median(calls[s]), statistics.median(uploads[s])) for s in sessions}


def remote_run_us(sess):
    _, dev, vm = sess
    x = tvm.runtime.tensor(X, dev)
    vm.time_evaluator("main", dev, number=NUMBER, repeat=1)(x)  # warm the workers
    return vm.time_evaluator("main", dev, number=NUMBER, repeat=REPEAT)(x).median * 1e6


def local_run_us(side):
    """The mlp timed in-process by the runtime that side's server uses."""
    if side == "ours":
        cmd = [os.path.join(REPO, "target/release/tvm-rt"), "bench", MLP, "--runs", str(NUMBER * REPEAT), "--json"]
        return json.loads(subprocess.check_output(cmd, text=True))["latency_ms"]["mean"] * 1e3
    vm = relax.VirtualMachine(tvm.runtime.load_module(MLP), tvm.cpu())
    x = tvm.runtime.tensor(X, tvm.cpu())
    vm.time_evaluator("main", tvm.cpu(), number=NUMBER, repeat=1)(x)
    return vm.time_evaluator("main", tvm.cpu(), number=NUMBER, repeat=REPEAT)(x).median * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=20, help="interleaved call/upload blocks per round")
    ap.add_argument("--model", default="mlp", help="a one-input model of tests/data/relax-0.27 (mlp, cnn)")
    a = ap.parse_args()
    global MLP, X
    MLP = os.path.join(DATA, a.model, "lib.so")
    info = json.load(open(os.path.join(DATA, "manifest.json")))["models"][a.model]["cases"][0]["inputs"][0]
    X = np.fromfile(os.path.join(DATA, a.model, info["file"]), info["dtype"]).reshape(info["shape"])
    rows = {"ours": [], "tvm027": []}
    for i in range(a.rounds):
        ports = {side: free_port() for side in rows}
        procs = {side: start(side, port) for side, port in ports.items()}
        try:
            sessions = {side: session(port) for side, port in ports.items()}
            fast = interleaved(sessions, a.blocks)
            for side in (("ours", "tvm027") if i % 2 == 0 else ("tvm027", "ours")):
                rows[side].append(fast[side] + (remote_run_us(sessions[side]), local_run_us(side)))
            del sessions
        finally:
            for p in procs.values():
                p.terminate()
                p.wait()
    med = {s: [statistics.median(col) for col in zip(*v)] for s, v in rows.items()}
    print(f"rpc bench ({a.model}): {a.rounds} alternating rounds, medians; loopback; an apache-tvm 0.27 Python host")
    print(f"{'server':<8} {'call us':>9} {'upload MB/s':>12} {'remote run us':>14} {'local run us':>13} {'remote/local':>13}")
    for s, (call, up, remote, local) in med.items():
        print(f"{s:<8} {call:>9.1f} {up:>12.0f} {remote:>14.1f} {local:>13.1f} {remote / local:>13.3f}")
    for s, v in rows.items():
        print(f"  {s} rounds: " + "; ".join(", ".join(f"{x:.1f}" for x in r) for r in v))
    o, t = med["ours"], med["tvm027"]
    print(f"ours / tvm027: call {o[0] / t[0]:.2f}x (goal <= 1.0), upload {o[1] / t[1]:.2f}x (goal >= 1.0)")


if __name__ == "__main__":
    main()
