"""``python -m tvmrt.rpc_server``: the runtime's RPC server started from Python answers TVM's
handshake (the server key, the mismatch code for a wrong key) and serves a session (InitServer,
then a global function looked up), listens on loopback unless ``--host`` says otherwise (with a
warning then), and bad options are refused with their names."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tvmrt
from listening import listening_on

RPC_MAGIC = 0xFF271
PACKAGE_ROOT = str(Path(tvmrt.__file__).resolve().parents[1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(tmp_path, *args: str):
    """The server on a free port, once it says it listens: its port, its process and what it
    printed before that line."""
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    cmd = [sys.executable, "-m", "tvmrt.rpc_server", "--port", str(port), "--workdir", str(tmp_path), *args]
    p = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    said = []
    for line in iter(p.stderr.readline, ""):
        if f"listening on port {port}" in line:
            return port, p, "".join(said)
        said.append(line)
    raise AssertionError(f"the server did not say it listens: {''.join(said)}")


def _stop(p: subprocess.Popen) -> None:
    p.terminate()
    p.wait(timeout=10)


@pytest.fixture
def server(tmp_path):
    port, p, _ = _start(tmp_path, "--key", "dev")
    yield port
    _stop(p)


def _hello(port: int, key: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    k = f"client:{key}".encode()
    s.sendall(struct.pack("<ii", RPC_MAGIC, len(k)) + k)
    return s


def _recv(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "connection closed"
        out += chunk
    return out


def test_handshake_and_a_session(server):
    s = _hello(server, "wrong")
    assert struct.unpack("<i", _recv(s, 4))[0] == RPC_MAGIC + 2
    s.close()
    s = _hello(server, "dev")
    assert struct.unpack("<i", _recv(s, 4))[0] == RPC_MAGIC
    n = struct.unpack("<i", _recv(s, 4))[0]
    assert _recv(s, n) == b"server:dev"
    # InitServer: code 2, protocol "0.8.0", no arguments.
    body = struct.pack("<iQ", 2, 5) + b"0.8.0" + struct.pack("<i", 0)
    s.sendall(struct.pack("<Q", len(body)) + body)
    length = struct.unpack("<Q", _recv(s, 8))[0]
    assert _recv(s, length) == struct.pack("<ii", 4, 0)  # Return, no value (as for 0.2x hosts)
    # GetGlobalFunc (code 9) of an existing and a missing function.
    # A handle (type code 3) either way; 0 for a missing one, as TVM's servers answer.
    for name, found in [(b"runtime.RPCTimeEvaluator", True), (b"no.such.function", False)]:
        body = struct.pack("<iiiQ", 9, 1, 11, len(name)) + name
        s.sendall(struct.pack("<Q", len(body)) + body)
        reply = _recv(s, struct.unpack("<Q", _recv(s, 8))[0])
        code, count, type_code, handle = struct.unpack("<iiiQ", reply)
        assert (code, count, type_code, handle != 0) == (4, 1, 3, found), reply
    s.sendall(struct.pack("<Qi", 4, 1))  # Shutdown
    s.close()


def test_listens_on_loopback_unless_told_and_warns_when_told(tmp_path):
    port, p, said = _start(tmp_path)
    sockets = listening_on(port)
    _stop(p)
    assert sockets == ["127.0.0.1"] and "warning" not in said, (sockets, said)
    port, p, said = _start(tmp_path, "--host", "0.0.0.0")
    sockets = listening_on(port)
    _stop(p)
    assert sockets == ["0.0.0.0"], sockets
    assert f"warning: listening on 0.0.0.0:{port}" in said and "run its code here" in said, said


def test_bad_options_are_refused_by_name():
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    r = subprocess.run(
        [sys.executable, "-m", "tvmrt.rpc_server", "--port", "70000"], env=env, capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2 and "port" in r.stderr, r.stderr
    with pytest.raises(tvmrt.TVMError, match="key"):
        from tvmrt.rpc_server import options_text

        options_text(key="a,b")
