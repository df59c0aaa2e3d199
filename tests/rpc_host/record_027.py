"""Record what an apache-tvm 0.2x host and an RPC server say to each other, for tests/rpc.rs to
replay without TVM: a recording TCP proxy (in a child process: tvm-ffi holds the GIL while a
remote object's deleter waits for the server, so an in-process proxy would deadlock) between the
host (this process) and the server, and a short session through it: upload tests/data/relax-0.27
mlp and tuple, run them through the remote Relax VM (mlp with its recorded input; tuple through
set_input / invoke_stateful / get_output), time mlp, a remote tensor round trip, a missing
function, a failing call, download.

    python -m tvm.exec.rpc_server --host 127.0.0.1 --port 9310 --port-end 9320 &   # 0.27's own
    python tests/rpc_host/record_027.py 127.0.0.1:9310 tests/data/rpc/relax027_session

writes NAME.host.bin (the host's bytes after the handshake) and NAME.server.bin (the server's).
"""

import os
import socket
import struct
import subprocess
import sys
import threading


def handshake_len(data):
    """Bytes of the handshake at the start of a stream: magic, key length, key."""
    return 8 + struct.unpack_from("<i", data, 4)[0]


def proxy_main(upstream, out):
    """The child: accept one host, pump both ways, write the streams when both ends closed."""
    host, port = upstream.rsplit(":", 1)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    print(listener.getsockname()[1], flush=True)
    down, _ = listener.accept()
    up = socket.create_connection((host, int(port)))
    streams = {"host": bytearray(), "server": bytearray()}

    def pump(src, dst, buf):
        while True:
            data = src.recv(1 << 16)
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            buf.extend(data)
            dst.sendall(data)

    t = threading.Thread(target=pump, args=(up, down, streams["server"]))
    t.start()
    pump(down, up, streams["host"])
    t.join()
    for side, data in streams.items():
        with open(f"{out}.{side}.bin", "wb") as f:
            f.write(bytes(data[handshake_len(data):]))
    print(f"{out}: host {len(streams['host'])} bytes, server {len(streams['server'])} bytes", flush=True)


def session(port):
    import numpy as np
    import tvm
    from tvm import relax, rpc

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from host_flow_027 import DATA, case

    remote = rpc.connect("127.0.0.1", port)
    dev = remote.cpu()
    remote.upload(os.path.join(DATA, "mlp/lib.so"), target="mlp.so")
    vm = relax.VirtualMachine(remote.load_module("mlp.so"), dev)
    inputs, want = case("mlp")
    x = tvm.runtime.tensor(inputs[0], dev)
    np.testing.assert_allclose(vm["main"](x).numpy(), want[0], rtol=1e-5, atol=1e-6)
    vm.time_evaluator("main", dev, number=2, repeat=2)(x)
    try:
        vm["main"](tvm.runtime.tensor(np.zeros((5, 32), "float32"), dev))
    except tvm.error.RPCError:
        pass
    try:
        remote.load_module("mlp.so")["no_such_function"]
    except AttributeError:
        pass
    remote.upload(os.path.join(DATA, "tuple/lib.so"), target="tuple.so")
    tvm_tuple = relax.VirtualMachine(remote.load_module("tuple.so"), dev)
    tin, tout = case("tuple")
    tvm_tuple.set_input("main", *[tvm.runtime.tensor(t, dev) for t in tin])
    tvm_tuple.invoke_stateful("main")
    for o, w in zip(tvm_tuple.get_outputs("main"), tout):
        np.testing.assert_allclose(o.numpy(), w, rtol=1e-5, atol=1e-6)
    a = tvm.runtime.tensor(np.arange(12, dtype="float32"), dev)
    assert np.array_equal(a.numpy(), np.arange(12, dtype="float32"))
    assert remote.download("tuple.so") == open(os.path.join(DATA, "tuple/lib.so"), "rb").read()


def main():
    if sys.argv[1] == "--proxy":
        proxy_main(sys.argv[2], sys.argv[3])
        return
    upstream, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    child = subprocess.Popen([sys.executable, __file__, "--proxy", upstream, out], stdout=subprocess.PIPE, text=True)
    port = int(child.stdout.readline())
    session(port)
    import gc

    gc.collect()
    print(child.stdout.readline().strip())
    child.wait(timeout=30)


if __name__ == "__main__":
    main()
