"""A model repository built from the repository's demo models, and the real tritonserver
(the one nvidia-pytriton bundles) started on it with this backend, bound to 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Dict, Optional

REPO = Path(__file__).resolve().parents[2]
# TRITON_TEST_BACKEND: another build of the backend (scripts/triton_asan.sh: instrumented);
# TRITON_TEST_SERVER_PRELOAD: LD_PRELOAD for the server process alone (the sanitizer's runtime);
# TRITON_TEST_EXIT_STALL_OK=1: a server that stopped serving and unloaded every model but then
# stalls in its exit handlers counts as stopped (under ASan it does: see scripts/triton_asan.sh).
BACKEND = Path(os.environ.get("TRITON_TEST_BACKEND") or REPO / "target/release/libtriton_tvmrt.so")
EXIT_STALL_OK = os.environ.get("TRITON_TEST_EXIT_STALL_OK") == "1"
UNLOADED = "Found 0 live models and 0 in-flight non-inference requests"
FIXTURES = json.loads((REPO / "target/demo/python_fixtures.json").read_text())
RELAX = REPO / "tests/data/relax-0.27"
RELAX018 = REPO / "tests/data/relax-0.18"
# The sequence block at batch 1, 2, 4 by length 4, 8 and single sequences' numbers alone
# (`python_fixtures --seq-grid`).
SEQ_GRID = json.loads((REPO / "target/demo/seq_grid.json").read_text())


def tritonserver() -> Path:
    import pytriton

    return Path(pytriton.__file__).parent / "tritonserver/bin/tritonserver"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def add_model(repo: Path, name: str, files: Dict[str, Path], config: str = "") -> Path:
    """`repo/name/config.pbtxt` (`backend: "tvmrt"` and `config`) and `repo/name/1/` holding
    `files` (name in the version directory -> source file)."""
    version = repo / name / "1"
    version.mkdir(parents=True)
    for dest, src in files.items():
        shutil.copy(src, version / dest)
    (repo / name / "config.pbtxt").write_text(f'backend: "tvmrt"\n{config}')
    return version


def bucket_files() -> Dict[str, Path]:
    """The demo at batch 1, 2, 4 and 8 and a manifest `model.buckets` listing them."""
    versions = [Path(v) for v in FIXTURES["versions"]]
    return {v.name: v for v in versions}


def seq_grid_files() -> Dict[str, Path]:
    """The versions the sequence block's manifest lists, and the manifest as `model.buckets`."""
    manifest = Path(SEQ_GRID["manifest"])
    names = [line for line in manifest.read_text().splitlines() if line and not line.startswith("#")]
    return {"model.buckets": manifest, **{n: manifest.parent / n for n in names}}


def write_manifest(version: Path) -> None:
    names = sorted(p.name for p in version.glob("*.so"))
    (version / "model.buckets").write_text("".join(f"{n}\n" for n in names))


def failure_trio(version: Path) -> None:
    """The legacy trio over tests/fixtures/failure_kernels.c: x [1, 16] -> 2x (fails with a
    message on a negative value) -> + 1 (fails without one on NaN); output `add_one_node`."""
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", f"-I{REPO / 'include'}", str(REPO / "tests/fixtures/failure_kernels.c"),
                    "-o", str(version / "model.so"), "-lm"], check=True)
    def op(name, func, inputs):
        return {"op": "tvm_op", "name": name, "inputs": [[i, 0, 0] for i in inputs],
                "attrs": {"num_outputs": "1", "num_inputs": str(len(inputs)), "flatten_data": "0", "func_name": func}}
    nodes = [{"op": "null", "name": "x", "inputs": []}, op("double_node", "fs_double_checked", [0]),
             op("add_one_node", "fs_add_one_silent", [1])]
    graph = {"nodes": nodes, "arg_nodes": [0], "heads": [[2, 0, 0]], "node_row_ptr": [0, 1, 2, 3],
             "attrs": {"dltype": ["list_str", ["float32"] * 3], "device_index": ["list_int", [1] * 3],
                       "storage_id": ["list_int", [0, 1, 2]], "shape": ["list_shape", [[1, 16]] * 3]}}
    (version / "graph.json").write_text(json.dumps(graph))


class Server:
    """tritonserver on `repo` with the backend copied into its own backend directory (the whole
    install: `<backends>/tvmrt/libtriton_tvmrt.so`)."""

    def __init__(self, repo: Path, workdir: Path, *args: str) -> None:
        backends = workdir / "backends"
        (backends / "tvmrt").mkdir(parents=True, exist_ok=True)
        shutil.copy(BACKEND, backends / "tvmrt/libtriton_tvmrt.so")
        self.http, self.grpc, self.metrics = free_port(), free_port(), free_port()
        self.log = workdir / "server.log"
        cmd = [str(tritonserver()), f"--model-repository={repo}", f"--backend-directory={backends}",
               "--http-address=127.0.0.1", "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1",
               f"--http-port={self.http}", f"--grpc-port={self.grpc}", f"--metrics-port={self.metrics}",
               "--exit-on-error=false", "--strict-readiness=false", *args]
        env = dict(os.environ)
        preload = env.pop("TRITON_TEST_SERVER_PRELOAD", "")
        if preload:
            env["LD_PRELOAD"] = preload
        self.process = subprocess.Popen(cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT, env=env)
        self.wait_ready()

    def get(self, path: str):
        return json.load(urllib.request.urlopen(f"http://127.0.0.1:{self.http}{path}", timeout=10))

    def post(self, path: str, body: Optional[dict] = None):
        data = json.dumps(body or {}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}{path}", data=data, method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
            return json.loads(text) if text else {}

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline and self.process.poll() is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.http}/v2/health/ready", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"tritonserver did not become ready: {self.log.read_text()[-4000:]}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60 if not EXIT_STALL_OK else 5)
            except subprocess.TimeoutExpired:
                if EXIT_STALL_OK and self.stalled_after_unloading():
                    return 0
                self.process.kill()
        return self.process.wait()

    def stalled_after_unloading(self) -> bool:
        """With EXIT_STALL_OK: wait (up to 60 s) for the log to show every model unloaded, then a
        few seconds for the exit; a server still there is killed, and counts as stopped cleanly
        when its log holds no sanitizer report."""
        deadline = time.time() + 60
        while UNLOADED not in self.log.read_text() and time.time() < deadline and self.process.poll() is None:
            time.sleep(0.2)
        try:
            self.process.wait(timeout=3)
            return False  # it exited: its own status stands
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        text = self.log.read_text()
        return UNLOADED in text and "Sanitizer" not in text
