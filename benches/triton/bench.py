"""The Triton backend's bench: the real tritonserver 2.51 (nvidia-pytriton 0.7.0) loaded by
perf_analyzer (the one in the tritonclient 2.40.0 wheel), sides alternating round by round,
medians printed with every round's figure so the noise shows.

    bash scripts/triton_tests.sh -k nothing      # the server's venv (target/triton-venv), the fixtures
    cargo run --release --example python_fixtures -- --wide
    cargo build --release                        # libtvm_runtime.so for the kserve and cnn parts
    bash scripts/serve_tests.sh -k nothing       # the KServe front end's venv (kserve part)
    target/triton-venv/bin/python benches/triton/bench.py [--rounds 3] [--seconds 3] [--only floor,kserve,batching,cnn,rss]

Parts (targets from the issue):
- floor: the Relax mlp (x [4, 32]) on our backend against the same server with a C identity
  backend (benches/triton/identity_backend.c, built here with cc) on a tensor of the same shape,
  gRPC, concurrency 1, p50 (target: within 1.2x).
- kserve: the same model on our KServe front end (`python -m tvmrt.serve`), concurrency 1, p50
  (target: ours at most 1/5 of it). perf_analyzer needs Triton's model-config endpoint, which
  KServe lacks, so both sides of this pair are timed by one tritonclient HTTP client here.
- batching: the wide model's bucket set (batch 1, 2, 4, 8; 8 MB of weights) at concurrency 16,
  with dynamic batching against without (target: >= 2x inferences/s).
- cnn: the demo CNN ([1, 3, 64, 64], compute-bound) on our backend against Triton's python
  backend running the same file through the `tvmrt` package (benches/triton/python_cnn), one
  instance each, at --concurrency (target: throughput >= 1.3x, p50 lower); also on the pipeline
  (core_groups=2).
- rss: the server's RSS with 4 instances of the wide model against 1 (target: within 1.2x).

perf_analyzer's own venv (target/perf-venv) is made on first use.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "triton/python_tests"))
import harness  # noqa: E402

PERF_VENV = REPO / "target/perf-venv"
DEMO = REPO / "target/demo"
MLP = REPO / "tests/data/relax-0.27/mlp/lib.so"


def perf_analyzer() -> Path:
    """perf_analyzer from the tritonclient 2.40.0 wheel, in its own cached venv."""
    exe = PERF_VENV / "bin/perf_analyzer"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PERF_VENV)], check=True)
        subprocess.run([str(PERF_VENV / "bin/pip"), "install", "-q", "--disable-pip-version-check",
                        "tritonclient[all]==2.40.0"], check=True)
    return exe


def perf_env() -> dict:
    """libb64.so.0d and libcudart.so.12 from pytriton's bundled libraries (stored there under
    hashed names: linked under their own names in the perf venv's `libs/`)."""
    import pytriton

    bundled = Path(pytriton.__file__).parent.parent / "nvidia_pytriton.libs"
    links = PERF_VENV / "libs"
    links.mkdir(exist_ok=True)
    for name, pattern in (("libb64.so.0d", "libb64-*.so.0d"), ("libcudart.so.12", "libcudart-*.so.12*")):
        found = sorted(bundled.glob(pattern))
        if not found:
            sys.exit(f"{bundled} has no {pattern}: perf_analyzer needs {name}")
        if not (links / name).exists():
            (links / name).symlink_to(found[0])
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(filter(None, [str(links), env.get("LD_LIBRARY_PATH", "")]))
    return env


def identity_backend(backends: Path) -> None:
    """benches/triton/identity_backend.c built into `backends/identity/`."""
    (backends / "identity").mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", f"-I{REPO / 'triton/include'}",
                    str(Path(__file__).with_name("identity_backend.c")),
                    "-o", str(backends / "identity/libtriton_identity.so")], check=True)


def model(repo: Path, name: str, backend: str, files: dict, config: str = "") -> None:
    version = repo / name / "1"
    version.mkdir(parents=True)
    for dest, src in files.items():
        shutil.copy(src, version / dest)
    (repo / name / "config.pbtxt").write_text(f'backend: "{backend}"\n{config}')


def start(repo: Path, work: Path) -> harness.Server:
    backends = work / "backends"
    identity_backend(backends)
    return harness.Server(repo, work)


def measure(s: harness.Server, name: str, concurrency: int, seconds: float, shape: str = "") -> dict:
    """perf_analyzer over gRPC at `concurrency`: inferences/s and p50 / p99 in microseconds."""
    out = Path(tempfile.mkstemp(suffix=".csv")[1])
    cmd = [str(perf_analyzer()), "-m", name, "-u", f"127.0.0.1:{s.grpc}", "-i", "grpc",
           "--concurrency-range", str(concurrency), "--measurement-interval", str(int(seconds * 1000)),
           "--max-trials", "5", "--stability-percentage", "50", "-f", str(out)]
    if shape:
        cmd += ["--shape", shape]
    r = subprocess.run(cmd, env=perf_env(), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"perf_analyzer failed on {name}: {r.stdout[-2000:]} {r.stderr[-2000:]}")
    row = next(csv.DictReader(out.open()))
    return {"ips": float(row["Inferences/Second"]), "p50": float(row["p50 latency"]),
            "p99": float(row["p99 latency"])}


def alternate(rounds: int, sides: dict) -> dict:
    """Each side measured once per round, in turn: every round's figures per side."""
    out = {k: [] for k in sides}
    for _ in range(rounds):
        for k, f in sides.items():
            out[k].append(f())
    return out


def med(xs, key):
    return statistics.median(x[key] for x in xs)


def show(xs, key, fmt="{:.0f}"):
    return "[" + ", ".join(fmt.format(x[key]) for x in xs) + "]"


def floor(a, work: Path) -> None:
    repo = work / "models"
    model(repo, "mlp", "tvmrt", {"model.so": MLP})
    model(repo, "identity", "identity", {}, """max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4, 32 ] } ]
output [ { name: "output_0" data_type: TYPE_FP32 dims: [ 4, 32 ] } ]
""")
    s = start(repo, work)
    try:
        r = alternate(a.rounds, {k: (lambda k=k: measure(s, k, 1, a.seconds)) for k in ("identity", "mlp")})
    finally:
        s.stop()
    ratio = med(r["mlp"], "p50") / med(r["identity"], "p50")
    print(f"floor: gRPC concurrency 1 p50 (us): tvmrt mlp {med(r['mlp'], 'p50'):.0f} {show(r['mlp'], 'p50')}, "
          f"C identity {med(r['identity'], 'p50'):.0f} {show(r['identity'], 'p50')}: {ratio:.2f}x "
          f"(target <= 1.2x: {'met' if ratio <= 1.2 else 'MISSED'})")


def http_p50(port: int, name: str, x, seconds: float) -> dict:
    """One tritonclient HTTP (binary) client, requests back to back: p50 in microseconds."""
    import tritonclient.http as httpclient

    c = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
    i = httpclient.InferInput("x", list(x.shape), "FP32")
    i.set_data_from_numpy(x, binary_data=True)
    for _ in range(50):
        c.infer(name, [i])
    lat, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        c.infer(name, [i])
        lat.append(time.perf_counter() - t)
    return {"p50": statistics.median(lat) * 1e6, "n": len(lat)}


def kserve(a, work: Path) -> None:
    import numpy as np

    python = REPO / "target/serve-venv/bin/python"
    if not python.exists():
        sys.exit(f"{python} is missing: bash scripts/serve_tests.sh -k nothing makes it")
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), TVM_RUNTIME_LIBRARY=str(REPO / "target/release/libtvm_runtime.so"))
    port = harness.free_port()
    log = open(work / "kserve.log", "w")
    k = subprocess.Popen([str(python), "-m", "tvmrt.serve", "--model", f"mlp={MLP}", "--http-port", str(port)],
                         env=env, stdout=subprocess.DEVNULL, stderr=log)
    repo = work / "models"
    model(repo, "mlp", "tvmrt", {"model.so": MLP})
    s = start(repo, work)
    try:
        wait_ready(port, k, work / "kserve.log")
        x = np.random.RandomState(0).uniform(-1, 1, (4, 32)).astype(np.float32)
        r = alternate(a.rounds, {"triton": lambda: http_p50(s.http, "mlp", x, a.seconds),
                                 "kserve": lambda: http_p50(port, "mlp", x, a.seconds)})
    finally:
        s.stop()
        k.terminate()
        k.wait(60)
    ratio = med(r["kserve"], "p50") / med(r["triton"], "p50")
    print(f"kserve: mlp, HTTP concurrency 1 p50 (us): Triton + tvmrt {med(r['triton'], 'p50'):.0f} {show(r['triton'], 'p50')}, "
          f"KServe front end {med(r['kserve'], 'p50'):.0f} {show(r['kserve'], 'p50')}: ours is 1/{ratio:.1f} of it "
          f"(target <= 1/5: {'met' if ratio >= 5 else 'MISSED'})")


def wait_ready(port: int, p: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=1)
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"python -m tvmrt.serve did not become ready: {log.read_text()[-3000:]}")


def python_backend(backends: Path) -> None:
    """pytriton's python backend and its stub for this Python in `backends/python/`."""
    import pytriton

    server = Path(pytriton.__file__).parent / "tritonserver"
    dest = backends / "python"
    shutil.copytree(server / "backends/python", dest, dirs_exist_ok=True)
    stub = server / f"python_backend_stubs/{sys.version_info.major}.{sys.version_info.minor}/triton_python_backend_stub"
    shutil.copy(stub, dest / "triton_python_backend_stub")
    # The stub finds pytriton's bundled libraries relative to where it was installed.
    bundled = str(server.parent.parent / "nvidia_pytriton.libs")
    os.environ["LD_LIBRARY_PATH"] = ":".join(filter(None, [bundled, os.environ.get("LD_LIBRARY_PATH", "")]))


def cnn(a, work: Path) -> None:
    graph = json.loads((DEMO / "cnn_graph.json").read_text())
    nodes = graph["nodes"]
    data, out = nodes[graph["arg_nodes"][0]]["name"], nodes[graph["heads"][0][0]]["name"]
    shape = graph["attrs"]["shape"][1][graph["arg_nodes"][0]]
    out_shape = graph["attrs"]["shape"][1][graph["heads"][0][0]]
    dims = lambda s: ", ".join(map(str, s))  # noqa: E731
    one = "instance_group [ { kind: KIND_CPU, count: 1 } ]\n"
    repo = work / "models"
    model(repo, "cnn", "tvmrt", {"model.so": DEMO / "cnn_model.so"}, one)
    groups = 'parameters { key: "core_groups" value { string_value: "2" } }\n'
    model(repo, "cnn_groups", "tvmrt", {"model.so": DEMO / "cnn_model.so"}, one + groups)
    # not model.so: Python would import it as the module `model` before model.py
    model(repo, "cnn_python", "python", {"cnn.so": DEMO / "cnn_model.so",
                                         "model.py": Path(__file__).with_name("python_cnn") / "model.py"},
          one + f"""input [ {{ name: "{data}" data_type: TYPE_FP32 dims: [ {dims(shape)} ] }} ]
output [ {{ name: "{out}" data_type: TYPE_FP32 dims: [ {dims(out_shape)} ] }} ]
""")
    python_backend(work / "backends")
    site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    (repo / "cnn_python/1/sys_path.txt").write_text(f"{REPO / 'python'}\n{site}\n")
    os.environ["TVM_RUNTIME_LIBRARY"] = str(REPO / "target/release/libtvm_runtime.so")
    s = start(repo, work)
    try:
        ready = {m["name"]: m.get("state") for m in s.post("/v2/repository/index")}
        if ready.get("cnn_python") != "READY":
            raise RuntimeError("the python backend's model did not load: " + "\n".join(l for l in s.log.read_text().splitlines() if "cnn_python" in l or "stub" in l.lower())[-3000:])
        r = alternate(a.rounds, {k: (lambda k=k: measure(s, k, a.concurrency, a.seconds)) for k in ("cnn_python", "cnn", "cnn_groups")})
    finally:
        s.stop()
    ratio = med(r["cnn"], "ips") / med(r["cnn_python"], "ips")
    p50 = (med(r["cnn"], "p50"), med(r["cnn_python"], "p50"))
    print(f"cnn: {shape}, gRPC concurrency {a.concurrency}: tvmrt backend {med(r['cnn'], 'ips'):.1f} inferences/s "
          f"{show(r['cnn'], 'ips', '{:.1f}')} p50 {p50[0]:.0f} us {show(r['cnn'], 'p50')}; python backend + tvmrt "
          f"{med(r['cnn_python'], 'ips'):.1f} {show(r['cnn_python'], 'ips', '{:.1f}')} p50 {p50[1]:.0f} us "
          f"{show(r['cnn_python'], 'p50')}: {ratio:.2f}x (target >= 1.3x and p50 lower: "
          f"{'met' if ratio >= 1.3 and p50[0] < p50[1] else 'MISSED'})")
    g = r["cnn_groups"]
    print(f"  the same on the pipeline (core_groups=2, a request per core): {med(g, 'ips'):.1f} inferences/s "
          f"{show(g, 'ips', '{:.1f}')} p50 {med(g, 'p50'):.0f} us {show(g, 'p50')}: "
          f"{med(g, 'ips') / med(r['cnn_python'], 'ips'):.2f}x the python backend's")


def batching(a, work: Path) -> None:
    manifest = DEMO / "wide.buckets"
    if not manifest.exists():
        sys.exit(f"{manifest} is missing: cargo run --release --example python_fixtures -- --wide")
    lines = [line.strip() for line in manifest.read_text().splitlines() if line.strip() and not line.startswith("#")]
    manifest_files = {Path(line).name: manifest.parent / line for line in lines}
    repo = work / "models"
    for name, config in (("batched", "dynamic_batching { }\n"), ("alone", "max_batch_size: 8\n")):
        model(repo, name, "tvmrt", manifest_files, config)
        (repo / name / "1/model.buckets").write_text("".join(f"{n}\n" for n in manifest_files))
    s = start(repo, work)
    try:
        shape = "data:1,64,64"
        r = alternate(a.rounds, {k: (lambda k=k: measure(s, k, 16, a.seconds, shape)) for k in ("alone", "batched")})
    finally:
        s.stop()
    ratio = med(r["batched"], "ips") / med(r["alone"], "ips")
    print(f"batching: wide buckets, concurrency 16, inferences/s: dynamic batching {med(r['batched'], 'ips'):.0f} "
          f"{show(r['batched'], 'ips')}, without {med(r['alone'], 'ips'):.0f} {show(r['alone'], 'ips')}: "
          f"{ratio:.2f}x (target >= 2x: {'met' if ratio >= 2 else 'MISSED'})")


def rss(a, work: Path) -> None:
    wide = DEMO / "wide_model.so"
    out = {}
    for count in (1, 4):
        repo = work / f"n{count}/models"
        model(repo, "wide", "tvmrt", {"model.so": wide}, f"instance_group [ {{ kind: KIND_CPU, count: {count} }} ]\n")
        s = start(repo, work / f"n{count}")
        try:
            measure(s, "wide", count, 1.0)
            out[count] = harness_rss(s.process.pid)
        finally:
            s.stop()
    print(f"rss: wide model (8 MB of weights): 1 instance {out[1] / 1024:.1f} MB, 4 instances {out[4] / 1024:.1f} MB: "
          f"{out[4] / out[1]:.2f}x (target <= 1.2x: {'met' if out[4] <= 1.2 * out[1] else 'MISSED'})")


def harness_rss(pid: int) -> int:
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    return int(fields["VmRSS"].split()[0])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--only", default="floor,kserve,batching,cnn,rss")
    p.add_argument("--concurrency", type=int, default=2, help="the cnn part's concurrency")
    a = p.parse_args()
    parts = {"floor": floor, "kserve": kserve, "batching": batching, "cnn": cnn, "rss": rss}
    for name in a.only.split(","):
        if name not in parts:
            sys.exit(f"--only: unknown part `{name}` (parts: {', '.join(parts)})")
        with tempfile.TemporaryDirectory(prefix=f"triton-bench-{name}-") as work:
            started = time.time()
            parts[name](a, Path(work))
            print(f"  ({name}: {time.time() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
