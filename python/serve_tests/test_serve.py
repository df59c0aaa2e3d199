"""``python -m tvmrt.serve``, started for real (KServe's ModelServer in a subprocess), driven by
tritonclient from its own process: HTTP and gRPC listening on loopback unless ``--host`` says
otherwise, the runtime's numbers over HTTP JSON, HTTP binary and gRPC with ``served_by`` in
every response, the model metadata (-1 for a bucketed dimension), bad
requests answered with 4xx while the server stays ready, and SIGTERM ending it cleanly.

Run by scripts/serve_tests.sh, which makes the two virtual environments."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tvmrt
from harness import free_port, listening_when_up, start_server

REPO = Path(__file__).resolve().parents[2]
CLIENT_PYTHON = os.environ.get("TVMRT_SERVE_CLIENT_PYTHON", "")
FIXTURES = json.loads((REPO / "target/demo/python_fixtures.json").read_text())
MLP = REPO / "tests/data/relax-0.27/mlp/lib.so"


@pytest.fixture(scope="module")
def server():
    grpc_port = free_port()
    http_port, p = start_server("--grpc-port", str(grpc_port),
                                "--model", f"demo={FIXTURES['demo']}", "--model", f"buckets={FIXTURES['manifest']}", "--model", f"mlp={MLP}",
                                "--model", f"slow={FIXTURES['manifest']}", "--max-batch-delay-ms", "2000", "--max-body-bytes", "100000")
    yield {"http": http_port, "grpc": grpc_port, "process": p}
    if p.poll() is None:
        p.kill()


def post(port: int, path: str, body: bytes, headers=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def local_demo(x: np.ndarray) -> np.ndarray:
    m = tvmrt.load_module(FIXTURES["demo"])["default"](tvmrt.cpu())
    return m(x)[0]


def test_http_and_grpc_listen_on_loopback_by_default(server):
    assert listening_when_up(server["http"]) == ["127.0.0.1"]
    assert listening_when_up(server["grpc"]) == ["127.0.0.1"]


def test_host_is_where_http_and_grpc_listen():
    grpc_port = free_port()
    http_port, p = start_server("--host", "0.0.0.0", "--grpc-port", str(grpc_port), "--model", f"demo={FIXTURES['demo']}")
    try:
        assert listening_when_up(http_port) == ["0.0.0.0"]
        # gRPC takes 0.0.0.0 as its wildcard: one IPv6 socket on every interface, IPv4 too
        assert listening_when_up(grpc_port) in (["0.0.0.0"], ["::"])
    finally:
        p.kill()
        p.wait()


def test_the_log_names_where_grpc_listens_and_a_request_warns_nothing(tmp_path):
    """KServe logs the wildcard address it asked for; the log names the address gRPC listens on,
    once. And a request logs no deprecation warning (FastAPI 0.131 and later, which Ray Serve 2.60
    needs, warn on every response of KServe 0.21's ORJSONResponse)."""
    grpc_port = free_port()
    log = tmp_path / "serve.log"
    http_port, p = start_server("--grpc-port", str(grpc_port), "--model", f"demo={FIXTURES['demo']}", log=log)
    try:
        x = np.zeros(256, np.float32)
        body = {"inputs": [{"name": "data", "shape": [1, 1, 16, 16], "datatype": "FP32", "data": x.tolist()}]}
        status, _ = post(http_port, "/v2/models/demo/infer", json.dumps(body).encode(), {"Content-Type": "application/json"})
        assert status == 200
    finally:
        p.kill()
        p.wait()
    text = log.read_text()
    assert text.count(f"gRPC server on 127.0.0.1:{grpc_port}") == 1, text[-3000:]
    assert f"[::]:{grpc_port}" not in text, text[-3000:]
    assert "Deprecat" not in text, text[-3000:]


@pytest.mark.skipif(not CLIENT_PYTHON, reason="needs the tritonclient venv (TVMRT_SERVE_CLIENT_PYTHON)")
def test_numbers_over_http_json_binary_and_grpc(server):
    case = FIXTURES["cases"][0]
    x = np.array(case["input_bits"], dtype=np.uint32).view(np.float32).reshape(1, 1, 16, 16)
    want = np.array(case["capi_output_bits"], dtype=np.uint32).view(np.float32)
    job = {"http_port": server["http"], "grpc_port": server["grpc"], "model": "demo", "input_name": "data",
           "output_name": "tvmgen_default_fused_nn_softmax", "datatype": "FP32", "dtype": "float32",
           "shape": [1, 1, 16, 16], "input": x.reshape(-1).tolist()}
    r = subprocess.run([CLIENT_PYTHON, str(Path(__file__).with_name("client.py"))], input=json.dumps(job),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    for proto in ("http_json", "http_binary", "grpc"):
        y = np.array(got[proto]["output"], dtype=np.float32).reshape(-1)
        assert np.array_equal(y.view(np.uint32), want.view(np.uint32)), proto
        assert got[proto]["served_by"] == f"{socket.gethostname()}/{server['process'].pid}", got[proto]
    assert got["ready"]
    assert got["metadata"]["inputs"] == [{"name": "data", "datatype": "FP32", "shape": [1, 1, 16, 16]}]


def test_metadata_marks_bucketed_dimensions(server):
    meta = json.load(urllib.request.urlopen(f"http://127.0.0.1:{server['http']}/v2/models/buckets"))
    assert meta["inputs"] == [{"name": "data", "datatype": "FP32", "shape": [-1, 1, 16, 16]}]
    assert meta["outputs"][0]["shape"] == [-1, 10]
    meta = json.load(urllib.request.urlopen(f"http://127.0.0.1:{server['http']}/v2/models/mlp"))
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [4, 32]}]


def test_bucketed_and_relax_models_give_the_local_numbers(server):
    x = np.random.RandomState(1).uniform(-1, 1, (3, 1, 16, 16)).astype("float32")
    body = {"inputs": [{"name": "data", "shape": [3, 1, 16, 16], "datatype": "FP32", "data": x.reshape(-1).tolist()}]}
    status, r = post(server["http"], "/v2/models/buckets/infer", json.dumps(body).encode(), {"Content-Type": "application/json"})
    assert status == 200, r
    y = np.array(r["outputs"][0]["data"], dtype=np.float32).reshape(r["outputs"][0]["shape"])
    assert y.shape == (3, 10)
    for row in range(3):
        np.testing.assert_allclose(y[row], local_demo(x[row:row + 1])[0], rtol=1e-6, atol=1e-7)
    xin = np.fromfile(MLP.parent / "main0_in0.bin", dtype="float32")
    want = np.fromfile(MLP.parent / "main0_out0.bin", dtype="float32")
    body = {"inputs": [{"name": "x", "shape": [4, 32], "datatype": "FP32", "data": xin.tolist()}]}
    status, r = post(server["http"], "/v2/models/mlp/infer", json.dumps(body).encode())
    assert status == 200, r
    np.testing.assert_allclose(np.array(r["outputs"][0]["data"], dtype=np.float32), want, rtol=1e-5, atol=1e-6)


def test_bad_requests_get_4xx_and_the_server_stays_ready(server):
    port = server["http"]
    good = {"name": "data", "shape": [1, 1, 16, 16], "datatype": "FP32", "data": [0.5] * 256}
    cases = [
        ("/v2/models/demo/infer", {"inputs": [dict(good, datatype="INT64")]}, 400, "datatype INT64"),
        ("/v2/models/demo/infer", {"inputs": [dict(good, shape=[1, 1, 4, 64])]}, 400, "shape [1, 1, 4, 64]"),
        ("/v2/models/demo/infer", {"inputs": [dict(good, name="x")]}, 400, "unknown input 'x'"),
        ("/v2/models/demo/infer", {"inputs": [dict(good, data=[1, 2, 3])]}, 400, "cannot decode"),
        ("/v2/models/nope/infer", {"inputs": [good]}, 404, "nope"),
    ]
    for path, body, code, text in cases:
        status, r = post(port, path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        assert (status, text in r.get("error", "")) == (code, True), (path, r)
    status, r = post(port, "/v2/models/demo/infer", b'{"inputs": [', {"Content-Type": "application/json"})
    assert status == 400 and "error" in r, r
    header = json.dumps({"inputs": [dict(good, data=None, parameters={"binary_data_size": 1024})]}).encode()
    status, r = post(port, "/v2/models/demo/infer", header + b"\0" * 100,
                     {"Inference-Header-Content-Length": str(len(header)), "Content-Type": "application/octet-stream"})
    assert status == 400 and "truncated" in r["error"], r
    header = json.dumps({"inputs": [{"name": "data", "datatype": "FP32", "parameters": {"binary_data_size": 1024}}]}).encode()
    status, r = post(port, "/v2/models/demo/infer", header + b"\0" * 1024,
                     {"Inference-Header-Content-Length": str(len(header)), "Content-Type": "application/octet-stream"})
    assert status == 400 and "malformed inference header" in r["error"], r
    status, r = post(port, "/v2/models/demo/infer", b"x" * 200000, {"Content-Type": "application/json"})
    assert status == 413, r
    assert json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready"))["ready"]
    status, r = post(port, "/v2/models/demo/infer", json.dumps({"inputs": [good]}).encode(), {"Content-Type": "application/json"})
    assert status == 200 and r["parameters"]["served_by"].endswith(f"/{server['process'].pid}"), r


def test_sigterm_answers_an_accepted_request_then_stops(server):
    """A request waiting on the model when SIGTERM arrives is still answered."""
    import concurrent.futures

    p = server["process"]
    x = np.zeros((1, 1, 16, 16), "float32")
    body = json.dumps({"inputs": [{"name": "data", "shape": [1, 1, 16, 16], "datatype": "FP32", "data": x.reshape(-1).tolist()}]})
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(post, server["http"], "/v2/models/slow/infer", body.encode(), {"Content-Type": "application/json"})
        time.sleep(0.5)  # accepted, and waiting in the batch for 1.5 s more
        p.send_signal(signal.SIGTERM)
        status, r = pending.result(timeout=60)
    assert status == 200 and r["outputs"][0]["shape"] == [1, 10], r
    assert p.wait(timeout=60) in (0, -signal.SIGTERM)


def start(*args: str, model: str = f"cnn={FIXTURES['large']}"):
    """A server with extra options, serving `model` (the ~30 ms CNN as `cnn`); its port and process."""
    return start_server("--model", model, *args)


CNN_BODY = json.dumps({"inputs": [{"name": "data", "shape": [1, 3, 64, 64], "datatype": "FP32",
                                   "data": [0.1] * (3 * 64 * 64)}]}).encode()


def metric(port: int, key: str) -> float:
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    return sum(float(l.split()[-1]) for l in metrics.splitlines() if l.startswith(key))


def outcome_count(port: int, outcome: str) -> float:
    return metric(port, f'tvmrt_requests_total{{model="cnn",outcome="{outcome}"}}')


def test_queue_limit_timeout_and_metrics():
    """With room for one request, 8 concurrent requests are each answered 200 or 429 (none
    fails, none waits unboundedly); a full queue (room for none) is 429 and a request over its
    timeout (0 s) 504, each counted on /metrics; the server stays ready."""
    import concurrent.futures

    headers = {"Content-Type": "application/json"}
    port, p = start("--max-queue", "1")
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda _: post(port, "/v2/models/cnn/infer", CNN_BODY, headers), range(8)))
        codes = [c for c, _ in results]
        assert set(codes) <= {200, 429} and 200 in codes, results
        assert outcome_count(port, "ok") == codes.count(200) and outcome_count(port, "busy") == codes.count(429)
    finally:
        p.kill()
        p.wait()
    port, p = start("--max-queue", "0", "--timeout-s", "0")
    try:
        status, r = post(port, "/v2/models/cnn/infer", CNN_BODY, headers)
        assert status == 429 and "limit is 0" in r["error"], r
        assert outcome_count(port, "busy") == 1
    finally:
        p.kill()
        p.wait()
    port, p = start("--timeout-s", "0")
    try:
        status, r = post(port, "/v2/models/cnn/infer", CNN_BODY, headers)
        assert status == 504 and "no answer within 0.0 s" in r["error"], r
        assert outcome_count(port, "timeout") == 1
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        assert "tvmrt_request_seconds_bucket" in metrics and "tvmrt_queue_depth" in metrics
        assert json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready"))["ready"]
    finally:
        p.kill()
        p.wait()


def infer_rows(port: int, x: np.ndarray):
    body = {"inputs": [{"name": "data", "shape": list(x.shape), "datatype": "FP32", "data": x.reshape(-1).tolist()}]}
    status, r = post(port, "/v2/models/buckets/infer", json.dumps(body).encode(), {"Content-Type": "application/json"})
    assert status == 200, r
    return np.array(r["outputs"][0]["data"], dtype=np.float32).reshape(r["outputs"][0]["shape"])


@pytest.mark.parametrize("batching", [True, False])
def test_concurrent_requests_batched_into_buckets(batching):
    """Concurrent requests of a bucket set over batch sizes run as batches (fewer runs than
    requests, on /metrics) when batching is on, one run each with --no-batching; every request
    gets its own rows, bit for bit what the model gives it alone."""
    import concurrent.futures

    rng = np.random.RandomState(7)
    xs = [rng.uniform(-1, 1, (rows, 1, 16, 16)).astype("float32") for rows in (1, 2, 1, 3, 1, 1, 2, 1)]
    options = ("--max-batch-delay-ms", "500") if batching else ("--no-batching",)
    port, p = start(*options, model=f"buckets={FIXTURES['manifest']}")
    try:
        with concurrent.futures.ThreadPoolExecutor(len(xs)) as pool:
            ys = list(pool.map(lambda x: infer_rows(port, x), xs))
        runs = metric(port, 'tvmrt_batch_size_count{model="buckets"}')
        requests = metric(port, 'tvmrt_batch_size_sum{model="buckets"}')
    finally:
        p.kill()
        p.wait()
    assert requests == len(xs)
    assert runs < len(xs) if batching else runs == len(xs), (runs, requests)
    for x, y in zip(xs, ys):
        assert y.shape == (x.shape[0], 10)
        for row in range(x.shape[0]):
            want = local_demo(x[row:row + 1])[0]
            assert np.array_equal(y[row].view(np.uint32), want.view(np.uint32)), (x.shape, row)


def test_pipeline_serves_concurrent_requests_with_the_models_numbers():
    """--pipeline runs a graph model through the request pipeline over two core groups: 8
    concurrent requests each get the model's numbers bit for bit."""
    import concurrent.futures

    port, p = start("--pipeline", "core_groups=2,threads_per_group=1", model=f"demo={FIXTURES['demo']}")
    cases = FIXTURES["cases"]
    try:
        def one(case):
            x = np.array(case["input_bits"], dtype=np.uint32).view(np.float32)
            body = {"inputs": [{"name": "data", "shape": [1, 1, 16, 16], "datatype": "FP32", "data": x.tolist()}]}
            return post(port, "/v2/models/demo/infer", json.dumps(body).encode(), {"Content-Type": "application/json"})

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(one, cases * 2))
    finally:
        p.kill()
        p.wait()
    for case, (status, r) in zip(cases * 2, results):
        assert status == 200, r
        want = np.array(case["capi_output_bits"], dtype=np.uint32)
        assert np.array_equal(np.array(r["outputs"][0]["data"], dtype=np.float32).view(np.uint32), want)


@pytest.mark.parametrize("model, option, text", [
    ("demo", "bogus=1", "bogus"),
    ("buckets", "core_groups=2", "does not run through the request pipeline"),
])
def test_bad_pipeline_options_stop_the_server_with_a_message(model, option, text):
    path = FIXTURES["demo"] if model == "demo" else FIXTURES["manifest"]
    r = subprocess.run([sys.executable, "-m", "tvmrt.serve", "--http-port", str(free_port()), "--model", f"{model}={path}",
                        "--pipeline", option], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"model {model}:" in r.stderr and text in r.stderr, r.stderr[-2000:]
