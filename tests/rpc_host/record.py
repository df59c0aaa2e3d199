"""Record what a real TVM 0.18 host and an RPC server say to each other, for tests/rpc.rs to
replay without TVM: a recording TCP proxy between the host (this process) and the server, and a
short session through it (upload the demo model, run it through the remote graph executor with
an input from numpy, read the output, time it, a missing function, remote arrays, download).

    source target/tvm-0.18/env.sh
    $TVM018_RPC_SERVER server --host=127.0.0.1 --port=9095 &          # TVM's own server
    $TVM018_PYTHON tests/rpc_host/record.py 127.0.0.1:9095 tests/data/rpc/demo_session

writes NAME.host.bin (the host's bytes after the handshake) and NAME.server.bin (the server's).
"""

import os
import socket
import sys
import threading

import numpy as np
import tvm
from tvm import rpc
from tvm.contrib import graph_executor

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HANDSHAKE_HOST = 4 + 4 + len("client:")  # magic, key length, "client:" (empty key)
HANDSHAKE_SERVER = 4 + 4 + len("server:")


def proxy(upstream, streams):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve():
        down, _ = listener.accept()
        up = socket.create_connection(upstream)

        def pump(src, dst, out):
            while True:
                data = src.recv(1 << 16)
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                out.extend(data)
                dst.sendall(data)

        t = threading.Thread(target=pump, args=(up, down, streams["server"]))
        t.start()
        pump(down, up, streams["host"])
        t.join()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1]


def session(port, model):
    remote = rpc.connect("127.0.0.1", port)
    remote.upload(model, target="demo.so")
    dev = remote.cpu(0)
    m = graph_executor.GraphModule(remote.load_module("demo.so")["default"](dev))
    x = np.random.RandomState(0).uniform(-1, 1, m.get_input(0).shape).astype("float32")
    m.set_input(0, x)
    m.run()
    y = m.get_output(0).numpy()
    m.get_num_outputs()
    m.module.time_evaluator("run", dev, number=2, repeat=2)()
    try:
        remote.load_module("demo.so")["no_such_function"]
    except AttributeError:
        pass
    a = tvm.nd.array(np.arange(12, dtype="float32"), dev)
    assert np.array_equal(a.numpy(), np.arange(12, dtype="float32"))
    assert remote.download("demo.so") == open(model, "rb").read()
    return y


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    out = sys.argv[2]
    streams = {"host": bytearray(), "server": bytearray()}
    local = proxy((host, int(port)), streams)
    model = os.path.join(REPO, "target/demo/demo_model.so")
    session(local, model)
    import gc

    gc.collect()
    import time

    time.sleep(0.5)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    open(out + ".host.bin", "wb").write(bytes(streams["host"][HANDSHAKE_HOST:]))
    open(out + ".server.bin", "wb").write(bytes(streams["server"][HANDSHAKE_SERVER:]))
    print(f"{out}: host {len(streams['host'])} bytes, server {len(streams['server'])} bytes")


if __name__ == "__main__":
    main()
