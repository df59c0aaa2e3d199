"""Starting ``python -m tvmrt.serve`` for the serving tests and the serving bench: a free port,
and a server process once it is ready."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import List, Optional, Tuple

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
from listening import listening_on  # noqa: E402 - shared with python/tests


def listening_when_up(port: int, timeout: float = 10.0) -> List[str]:
    """The addresses listening on ``port`` (see :func:`listening_on`), once there is one."""
    deadline = time.time() + timeout
    while not listening_on(port) and time.time() < deadline:
        time.sleep(0.1)
    return listening_on(port)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*args: str, env=None, log: Optional[Path] = None, timeout: float = 60.0) -> Tuple[int, subprocess.Popen]:
    """``python -m tvmrt.serve --http-port PORT *args`` once ``/v2/health/ready`` says ready: its
    HTTP port and process. Its stderr goes to ``log`` (a path), else to a pipe; a server not ready
    within ``timeout`` seconds is killed and its stderr raised."""
    port = free_port()
    cmd = [sys.executable, "-m", "tvmrt.serve", "--http-port", str(port), *args]
    stderr = open(log, "w") if log else subprocess.PIPE
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None:
        try:
            if json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=1))["ready"]:
                return port, p
        except OSError:
            pass
        time.sleep(0.2)
    p.kill()
    said = log.read_text() if log else p.stderr.read()
    raise RuntimeError(f"the server did not become ready ({' '.join(cmd)}): {said[-3000:]}")
