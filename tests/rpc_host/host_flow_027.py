"""An apache-tvm 0.2x host against an RPC server: upload `tvm.compile` libraries
(tests/data/relax-0.27), run them through `relax.VirtualMachine` on the remote CPU and compare
with the same library run locally by the host's own TVM, a tuple result through set_input /
invoke_stateful / get_output, a dynamic shape, `time_evaluator`, remote tensors round-tripped,
TVM's errors for a missing function and a failing call, and broken clients (garbage, a wrong
key, a huge length, a half packet): after each, a normal session still works.

    python tests/rpc_host/host_flow_027.py HOST PORT [KEY] [--tracker HOST:PORT] [--only NAME]

Exit code 0 when every step passed; each step prints one line.
"""

import argparse
import functools
import gc
import json
import os
import socket
import struct
import sys
import time

import numpy as np
import tvm
from tvm import relax, rpc

RPC_MAGIC = 0xFF271
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tests/data/relax-0.27")
FAILED = []


def step(name):
    def wrap(f):
        @functools.wraps(f)
        def run(*a, **k):
            t0 = time.time()
            try:
                out = f(*a, **k)
                print(f"ok    {name} ({(time.time() - t0) * 1e3:.0f} ms)", flush=True)
                return out
            except Exception as e:  # noqa: BLE001 - report every failure and go on
                FAILED.append(name)
                msg = str(e).strip().splitlines()
                print(f"FAIL  {name}: {msg[-1] if msg else type(e).__name__}", flush=True)

        return run

    return wrap


def connect(args):
    if args.tracker:
        thost, tport = args.tracker.rsplit(":", 1)
        return rpc.connect_tracker(thost, int(tport)).request(args.key, session_timeout=60)
    return rpc.connect(args.host, args.port, key=args.key, session_timeout=60)


def case(model, index=0):
    manifest = json.load(open(os.path.join(DATA, "manifest.json")))
    c = manifest["models"][model]["cases"][index]
    load = lambda d: np.fromfile(os.path.join(DATA, model, d["file"]), dtype=d["dtype"]).reshape(d["shape"])
    return [load(i) for i in c["inputs"]], [load(o) for o in c["outputs"]]


def local_run(model, inputs):
    """The same library run by the host's own TVM on its CPU."""
    vm = relax.VirtualMachine(tvm.runtime.load_module(os.path.join(DATA, model, "lib.so")), tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(x, tvm.cpu()) for x in inputs])
    return [o.numpy() for o in out] if isinstance(out, (tvm.ir.Array, list, tuple)) else [out.numpy()]


def remote_vm(remote, model):
    remote.upload(os.path.join(DATA, model, "lib.so"), target=f"{model}.so")
    return relax.VirtualMachine(remote.load_module(f"{model}.so"), remote.cpu())


@step("mlp through the remote Relax VM matches the local run")
def mlp(remote):
    inputs, recorded = case("mlp")
    vm = remote_vm(remote, "mlp")
    dev = remote.cpu()
    got = vm["main"](*[tvm.runtime.tensor(x, dev) for x in inputs]).numpy()
    np.testing.assert_allclose(got, local_run("mlp", inputs)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, recorded[0], rtol=1e-5, atol=1e-6)


@step("tuple result through set_input / invoke_stateful / get_output")
def tuple_result(remote):
    inputs, _ = case("tuple")
    vm = remote_vm(remote, "tuple")
    dev = remote.cpu()
    vm.set_input("main", *[tvm.runtime.tensor(x, dev) for x in inputs])
    vm.invoke_stateful("main")
    outs = vm.get_outputs("main")
    want = local_run("tuple", inputs)
    assert len(outs) == len(want), (len(outs), len(want))
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o.numpy(), w, rtol=1e-5, atol=1e-6)


@step("dynamic shapes (n = 1, 3, 8)")
def dynamic(remote):
    vm = remote_vm(remote, "dyn")
    dev = remote.cpu()
    for i in range(3):
        inputs, _ = case("dyn", i)
        got = vm["main"](tvm.runtime.tensor(inputs[0], dev)).numpy()
        np.testing.assert_allclose(got, local_run("dyn", inputs)[0], rtol=1e-5, atol=1e-6)


@step("time_evaluator times the remote model")
def timing(remote):
    inputs, _ = case("mlp")
    vm = remote_vm(remote, "mlp")
    dev = remote.cpu()
    args = [tvm.runtime.tensor(x, dev) for x in inputs]
    res = vm.time_evaluator("main", dev, number=5, repeat=3)(*args)
    assert len(res.results) == 3 and all(0 < t < 1 for t in res.results), res.results


@step("remote tensors round-trip")
def tensors(remote):
    dev = remote.cpu()
    x = np.arange(24, dtype="float32").reshape(4, 6)
    a = tvm.runtime.tensor(x, dev)
    assert np.array_equal(a.numpy(), x)
    b = tvm.runtime.empty((4, 6), "float32", device=dev)
    b.copyfrom(a)
    assert np.array_equal(b.numpy(), x)
    big = np.random.RandomState(0).rand(512, 1024).astype("float32")  # 2 MiB: several chunks
    assert np.array_equal(tvm.runtime.tensor(big, dev).numpy(), big)


@step("a missing function is TVM's AttributeError")
def missing(remote):
    remote.upload(os.path.join(DATA, "mlp/lib.so"), target="m.so")
    lib = remote.load_module("m.so")
    try:
        lib["no_such_function"]
    except AttributeError:
        pass
    else:
        raise AssertionError("no error")
    try:
        remote.get_function("no.such.global")
    except AttributeError:
        pass
    else:
        raise AssertionError("no error for a missing global")


@step("a failing call is TVM's RPCError and the session goes on")
def failing(remote):
    vm = remote_vm(remote, "mlp")
    dev = remote.cpu()
    try:
        vm["main"](tvm.runtime.tensor(np.zeros((5, 32), "float32"), dev))
    except tvm.error.RPCError as e:
        assert "Error caught from RPC call" in str(e), str(e)
    else:
        raise AssertionError("a wrong shape was accepted")
    inputs, _ = case("mlp")
    got = vm["main"](tvm.runtime.tensor(inputs[0], dev)).numpy()
    np.testing.assert_allclose(got, local_run("mlp", inputs)[0], rtol=1e-5, atol=1e-6)


@step("files: download, remove, nothing outside the work directory")
def files(remote):
    remote.upload(bytearray(b"\x01\x02\x03"), target="f.bin")
    assert remote.download("f.bin") == b"\x01\x02\x03"
    remote.remove("f.bin")
    try:
        remote.upload(bytearray(b"x"), target="../outside.bin")
    except tvm.error.RPCError:
        pass
    else:
        raise AssertionError("an upload left the work directory")


def raw(args, payload):
    s = socket.create_connection((args.host, args.port), timeout=5)
    try:
        s.sendall(payload)
        time.sleep(0.1)
    finally:
        s.close()


@step("broken clients do not stop the server")
def broken(args):
    key = f"client:{args.key}".encode()
    hello = struct.pack("<ii", RPC_MAGIC, len(key)) + key
    raw(args, b"GET / HTTP/1.1\r\n\r\n")
    raw(args, struct.pack("<ii", RPC_MAGIC, 0x7FFFFFFF))
    raw(args, struct.pack("<ii", RPC_MAGIC, 6) + b"client")
    raw(args, hello)
    # A session with a packet length of 2^60, then half a packet.
    raw(args, hello + struct.pack("<Q", 1 << 60))
    raw(args, hello + struct.pack("<Qi", 100, 3))
    time.sleep(0.3)
    remote = rpc.connect(args.host, args.port, key=args.key, session_timeout=60)
    assert np.array_equal(tvm.runtime.tensor(np.ones(3, "float32"), remote.cpu()).numpy(), np.ones(3))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("key", nargs="?", default="")
    p.add_argument("--tracker")
    p.add_argument("--only")
    args = p.parse_args()
    flows = [mlp, tuple_result, dynamic, timing, tensors, missing, failing, files]
    for f in flows:
        if args.only and args.only not in f.__name__:
            continue
        f(connect(args))
        # Let go of the session now: remote objects in reference cycles would keep it open, and a
        # server (this one, or TVM's) serves one session at a time.
        gc.collect()
    if not args.tracker and not args.only:
        broken(args)
    print("FAILED: " + ", ".join(FAILED) if FAILED else "all passed", flush=True)
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
