"""A two-node Ray cluster on this machine, for the cluster test and the serving bench:
``ray start --head`` bound to 127.0.0.2 and a second ``ray start --address=...`` bound to
127.0.0.3, one CPU each, each with its own ports (two nodes on one host collide otherwise) and
token authentication with a fresh token. ``ray stop --force`` at the end stops every Ray
process of this user on the machine."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import free_port

RAY = str(Path(sys.executable).with_name("ray"))
HEAD, SECOND = "127.0.0.2", "127.0.0.3"


def ray_start(env, *args: str) -> None:
    r = subprocess.run([RAY, "start", "--num-cpus=1", "--disable-usage-stats", f"--metrics-export-port={free_port()}",
                        f"--node-manager-port={free_port()}", f"--object-manager-port={free_port()}", *args],
                       env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"ray start {' '.join(args)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


@contextlib.contextmanager
def two_nodes():
    """The cluster's address and the environment its clients need."""
    with tempfile.TemporaryDirectory(prefix="tvmrt-ray-") as tmp:
        token = Path(tmp) / "auth_token"
        token.write_text(secrets.token_hex(32))
        env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
        port = free_port()
        try:
            ray_start(env, "--head", f"--node-ip-address={HEAD}", f"--port={port}", "--include-dashboard=false",
                      f"--ray-client-server-port={free_port()}", "--min-worker-port=23000", "--max-worker-port=23499")
            ray_start(env, f"--address={HEAD}:{port}", f"--node-ip-address={SECOND}", '--resources={"second_node": 1}',
                      "--min-worker-port=23500", "--max-worker-port=23999")
            yield f"{HEAD}:{port}", env
        finally:
            subprocess.run([RAY, "stop", "--force"], env=env, capture_output=True, timeout=120)
