"""A real TVM host against an RPC server: connect, upload a model, run it through the remote
graph executor and compare with TVM's own local run, time it, round-trip remote arrays, get
TVM's errors for a missing function and a failing call, download and remove files, and survive
broken clients (garbage, wrong magic or key, a huge length, a half packet, a client killed
mid-session): after each, a normal session still works.

Run with the Python of a TVM 0.18 build (runtime-only is enough; see docs/rpc.md):
    python tests/rpc_host/host_flow.py HOST PORT [KEY] [--tracker HOST:PORT] [--model PATH]
Exit code 0 when every step passed; each step prints one line.
"""

import argparse
import json
import os
import socket
import struct
import sys
import time

import numpy as np
import tvm
from tvm import rpc
from tvm.contrib import graph_executor

RPC_MAGIC = 0xFF271
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAILED = []


def step(name):
    def wrap(f):
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


def local_reference(model):
    lib = tvm.runtime.load_module(model)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    x = np.random.RandomState(0).uniform(-1, 1, m.get_input(0).shape).astype(m.get_input(0).dtype)
    m.set_input(0, x)
    m.run()
    return x, m.get_output(0).numpy()


@step("graph executor remotely gives TVM's local numbers")
def graph_flow(remote, model, x, want):
    remote.upload(model)
    rlib = remote.load_module(os.path.basename(model))
    dev = remote.cpu(0)
    m = graph_executor.GraphModule(rlib["default"](dev))
    m.set_input(0, x)
    m.run()
    got = m.get_output(0).numpy()
    assert got.shape == want.shape and np.array_equal(got, want), f"max diff {np.abs(got - want).max()}"
    assert m.get_num_outputs() == 1
    assert np.array_equal(m.get_input(0).numpy(), x)
    return m, rlib, dev


@step("time_evaluator remotely")
def timing(m, dev):
    res = m.module.time_evaluator("run", dev, number=20, repeat=3, min_repeat_ms=0)()
    assert len(res.results) == 3 and all(r > 0 for r in res.results), res.results
    print(f"      remote run: {res.mean * 1e6:.1f} us (median {res.median * 1e6:.1f})")


@step("remote arrays round-trip")
def arrays(remote):
    dev = remote.cpu(0)
    for dtype, shape in [("float32", (3, 4)), ("int8", (7,)), ("float64", (2, 2, 2)), ("int64", ())]:
        x = (np.arange(int(np.prod(shape))).reshape(shape) * 3 - 5).astype(dtype)
        a = tvm.nd.array(x, dev)
        assert np.array_equal(a.numpy(), x), dtype
        b = tvm.nd.empty(shape, dtype, dev)
        a.copyto(b)
        assert np.array_equal(b.numpy(), x), dtype


@step("a missing function is TVM's error")
def missing(rlib):
    try:
        rlib["no_such_function"]
    except (AttributeError, tvm.TVMError) as e:
        assert "no_such_function" in str(e), str(e)
        return
    raise AssertionError("no error")


@step("a failing call is an error, and the session goes on")
def failing(m, x):
    try:
        m.set_input(0, np.zeros((2, 3), "float32"))
    except (ValueError, tvm.TVMError):
        pass
    else:
        raise AssertionError("wrong shape accepted")
    try:
        m.module["set_input"]("no_such_input", tvm.nd.array(x, m.module["get_input"](0).device))
    except (ValueError, tvm.TVMError, AttributeError, KeyError) as e:
        assert "no_such_input" in str(e) or "input" in str(e), str(e)
    else:
        raise AssertionError("unknown input accepted")
    m.set_input(0, x)
    m.run()


@step("a Relax VM executable runs remotely with TVM's numbers")
def relax_vm(remote):
    from tvm.runtime import relax_vm as rvm

    d = os.path.join(REPO, "tests/data/relax-0.18/mlp")
    remote.upload(os.path.join(d, "lib.so"), target="mlp.so")
    dev = remote.cpu(0)
    vm = rvm.VirtualMachine(remote.load_module("mlp.so"), dev)
    x = np.fromfile(os.path.join(d, "input_0.bin"), dtype="float32").reshape(4, 32)
    want = np.fromfile(os.path.join(d, "output_0.bin"), dtype="float32").reshape(4, 10)
    assert np.array_equal(vm["main"](tvm.nd.array(x, dev)).numpy(), want)
    vm.set_input("main", tvm.nd.array(x, dev))
    vm.invoke_stateful("main")
    assert np.array_equal(vm.get_outputs("main").numpy(), want)
    res = vm.time_evaluator("main", dev, number=10, repeat=3)(tvm.nd.array(x, dev))
    assert len(res.results) == 3 and min(res.results) > 0


@step("download and remove")
def files(remote, model):
    name = os.path.basename(model)
    assert remote.download(name) == open(model, "rb").read()
    remote.upload(bytearray(b"abc"), target="sub/x.bin")
    assert remote.download("sub/x.bin") == b"abc"
    remote.remove("sub/x.bin")
    try:
        remote.download("sub/x.bin")
    except tvm.TVMError:
        pass
    else:
        raise AssertionError("a removed file was downloaded")
    try:
        remote.upload(bytearray(b"x"), target="../escape.bin")
    except tvm.TVMError:
        pass
    else:
        raise AssertionError("an upload outside the work directory was accepted")


def raw(args, payload, read=False):
    s = socket.create_connection((args.host, args.port), timeout=5)
    s.sendall(payload)
    try:
        return s.recv(64) if read else None
    except OSError:
        return None
    finally:
        s.close()


def handshake(key):
    k = f"client:{key}".encode()
    return struct.pack("<ii", RPC_MAGIC, len(k)) + k


@step("broken clients do not stop the server")
def faults(args):
    raw(args, b"garbage bytes\x00\xff" * 8)
    raw(args, struct.pack("<i", 0x12345) + b"\x00" * 8)
    answer = raw(args, handshake(args.key + "-wrong"), read=True)
    if not args.tracker:
        assert answer and struct.unpack("<i", answer[:4])[0] == RPC_MAGIC + 2, answer
    raw(args, struct.pack("<ii", RPC_MAGIC, 1 << 30))  # huge key length
    if not args.tracker:
        s = socket.create_connection((args.host, args.port), timeout=5)
        s.sendall(handshake(args.key))
        s.recv(64)
        s.sendall(struct.pack("<Q", 1 << 62))  # huge packet length
        s.close()
        s = socket.create_connection((args.host, args.port), timeout=5)
        s.sendall(handshake(args.key))
        s.recv(64)
        s.sendall(struct.pack("<Qi", 100, 3) + b"\x01\x02")  # half a packet, then gone
        s.close()
    remote = connect(args)
    assert remote.cpu(0).exist


@step("a client killed mid-session does not stop the server")
def killed(args):
    import subprocess

    code = (
        "import sys, time; from tvm import rpc\n"
        f"r = rpc.connect({args.host!r}, {args.port}, key={args.key!r})\n"
        "r.upload(bytearray(100000), target='big.bin')\nprint('connected', flush=True)\ntime.sleep(30)\n"
    )
    if args.tracker:
        return
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "connected"
    p.kill()
    p.wait()
    remote = connect(args)
    assert remote.cpu(0).exist


def session(args, model, x, want):
    remote = connect(args)
    out = graph_flow(remote, model, x, want)
    if out:
        m, rlib, dev = out
        timing(m, dev)
        missing(rlib)
        failing(m, x)
    arrays(remote)
    relax_vm(remote)
    files(remote, model)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("key", nargs="?", default="")
    ap.add_argument("--tracker")
    ap.add_argument("--model")
    args = ap.parse_args()
    model = args.model or json.load(open(os.path.join(REPO, "target/demo/python_fixtures.json")))["demo"]
    x, want = local_reference(model)
    session(args, model, x, want)
    import gc

    gc.collect()  # the session ends when its last remote object goes
    faults(args)
    killed(args)
    print("all steps passed" if not FAILED else f"failed: {FAILED}")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
