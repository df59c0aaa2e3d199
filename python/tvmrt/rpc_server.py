"""TVM's RPC server over this runtime: ``python -m tvmrt.rpc_server``.

A TVM host (``tvm.rpc.connect(host, port, key=...)``, or a tuning session through
``python -m tvm.exec.rpc_tracker``) uploads, runs and times models on this machine through it,
exactly as against TVM's own ``python -m tvm.exec.rpc_server``. The server is the runtime's
(``TVMRPCServerRun``); this module parses the same options as ``tvm-rt rpc-server``::

    python -m tvmrt.rpc_server [--host 127.0.0.1] [--port 9091] [--port-end 9199] [--key KEY]
                               [--tracker HOST:PORT] [--workdir DIR]
                               [--session-timeout SECONDS] [--max-packet BYTES]

It serves one session at a time until the process is interrupted (Ctrl-C or SIGTERM). A client
runs code on this machine (it uploads and loads libraries): the server listens on loopback
unless ``--host`` says otherwise, and warns when it listens beyond this machine.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import List, Optional

from ._lib import TVMError, check, lib


def options_text(
    host: str = "127.0.0.1",
    port: int = 9091,
    port_end: Optional[int] = None,
    key: str = "",
    tracker: Optional[str] = None,
    workdir: Optional[str] = None,
    session_timeout: Optional[int] = None,
    max_packet: Optional[int] = None,
) -> str:
    """The ``key=value,...`` options string of ``TVMRPCServerRun``."""
    given = {
        "host": host,
        "port": port,
        "port_end": port_end,
        "key": key,
        "tracker": tracker,
        "workdir": workdir,
        "session_timeout": session_timeout,
        "max_packet": max_packet,
    }
    items = []
    for name, value in given.items():
        if value is None:
            continue
        text = str(value)
        if "," in text or "=" in text:
            raise TVMError(f"rpc_server: {name} {text!r} cannot contain ',' or '='")
        items.append(f"{name}={text}")
    return ",".join(items)


def serve(**options) -> None:
    """Run the server in this thread until it fails (see :func:`options_text` for the options)."""
    check(lib.TVMRPCServerRun(options_text(**options).encode()))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tvmrt.rpc_server", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface, "
                        "and any machine that reaches it runs code here: a warning is printed)")
    p.add_argument("--port", type=int, default=9091, help="port to listen on")
    p.add_argument("--port-end", type=int, help="last port to try when --port is taken")
    p.add_argument("--key", default="",
                   help="the device's key, as TVM's: hosts connect with it or find the server by it through "
                        "--tracker; other keys are refused, but it is no password")
    p.add_argument("--tracker", help="a TVM RPC tracker (host:port) to register with")
    p.add_argument("--workdir", help="where session work directories are made")
    p.add_argument("--session-timeout", type=int, help="end a session after this many seconds")
    p.add_argument("--max-packet", type=int, help="largest packet accepted, in bytes")
    a = p.parse_args(argv)
    failure: List[BaseException] = []

    def run() -> None:
        try:
            serve(
                host=a.host,
                port=a.port,
                port_end=a.port_end,
                key=a.key,
                tracker=a.tracker,
                workdir=a.workdir,
                session_timeout=a.session_timeout,
                max_packet=a.max_packet,
            )
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failure.append(e)

    # The server blocks in C; it runs on a daemon thread so that Ctrl-C and SIGTERM end the process.
    t = threading.Thread(target=run, name="tvmrt-rpc-server", daemon=True)
    t.start()
    try:
        while t.is_alive():
            t.join(0.5)
    except KeyboardInterrupt:
        return 0
    if failure:
        print(f"python -m tvmrt.rpc_server: {failure[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
