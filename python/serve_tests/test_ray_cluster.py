"""``python -m tvmrt.serve --ray-address ... --replicas 2`` on a real two-node Ray cluster on this
machine (``ray start --head`` and a second ``ray start --address=...``, one CPU each, bound to
127.0.0.2 and 127.0.0.3 with their own ports): tritonclient gets the runtime's numbers over HTTP
and gRPC from replicas on both nodes; a replica killed under load is restarted by Ray while
every request gets a correct answer or a 5xx; SIGTERM ends the server and removes its
deployment.

Marked ``cluster`` (about a minute): ``scripts/serve_tests.sh -m cluster`` runs it alone,
``-m "not cluster"`` the rest."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import raycluster
from raycluster import HEAD, SECOND
from harness import free_port, start_server
from test_serve import CLIENT_PYTHON, FIXTURES, local_demo, post

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster():
    with raycluster.two_nodes() as c:
        yield c


@pytest.fixture(scope="module")
def server(cluster, tmp_path_factory):
    address, env = cluster
    log = tmp_path_factory.mktemp("serve") / "server.log"
    grpc_port = free_port()
    http_port, p = start_server("--grpc-port", str(grpc_port), "--model", f"buckets={FIXTURES['manifest']}",
                                "--ray-address", address, "--replicas", "2", "--max-replicas-per-node", "1",
                                "--timeout-s", "60", env=env, log=log, timeout=120)
    yield {"http": http_port, "grpc": grpc_port, "process": p, "log": log}
    if p.poll() is None:
        p.kill()


def node_of(served_by: str) -> str:
    return served_by.split("/")[0]


def test_replicas_on_both_nodes_give_the_local_numbers(server):
    case = FIXTURES["cases"][1]
    x = np.array(case["input_bits"], dtype=np.uint32).view(np.float32).reshape(1, 1, 16, 16)
    want = np.array(case["capi_output_bits"], dtype=np.uint32).view(np.float32).reshape(1, 10)
    job = {"http_port": server["http"], "grpc_port": server["grpc"], "model": "buckets", "input_name": "data",
           "output_name": "tvmgen_default_fused_nn_softmax", "datatype": "FP32", "dtype": "float32",
           "shape": [1, 1, 16, 16], "input": x.reshape(-1).tolist(), "repeat": 8}
    r = subprocess.run([CLIENT_PYTHON, str(Path(__file__).with_name("client.py"))], input=json.dumps(job),
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    nodes = set()
    for proto in ("http_json", "http_binary", "grpc"):
        for y in got[proto]["outputs"]:
            assert np.array_equal(np.array(y, dtype=np.float32).view(np.uint32), want.view(np.uint32)), proto
        nodes |= {node_of(s) for s in got[proto]["served_by_all"]}
    assert nodes == {HEAD, SECOND}, got


def infer(port: int, x: np.ndarray):
    body = {"inputs": [{"name": "data", "shape": list(x.shape), "datatype": "FP32", "data": x.reshape(-1).tolist()}]}
    return post(port, "/v2/models/buckets/infer", json.dumps(body).encode(), {"Content-Type": "application/json"})


def test_a_killed_replica_is_restarted_and_no_request_hangs(server):
    port = server["http"]
    x = np.random.RandomState(3).uniform(-1, 1, (1, 1, 16, 16)).astype("float32")
    want = local_demo(x)
    pids = {}
    while len(pids) < 2:
        status, r = infer(port, x)
        assert status == 200, r
        node, pid = r["parameters"]["served_by"].split("/")
        pids[node] = int(pid)
    victim = pids[SECOND]

    def one(i):
        if i == 10:
            os.kill(victim, signal.SIGKILL)
        return infer(port, x)

    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(one, range(60)))
    except OSError as e:
        lines = [l for l in server["log"].read_text().splitlines() if "kserve.trace" not in l and "uvicorn.access" not in l]
        pytest.fail(f"a request got no answer ({e}); the server said:\n" + "\n".join(lines[-60:]))
    for status, r in results:
        assert status == 200 or status >= 500, (status, r)
        if status == 200:
            y = np.array(r["outputs"][0]["data"], dtype=np.float32).reshape(1, 10)
            assert np.array_equal(y.view(np.uint32), want.view(np.uint32))
        else:
            assert "error" in r, r
    assert sum(s == 200 for s, _ in results) >= 50, [s for s, _ in results]
    # Ray Serve starts a new replica on the node that lost one.
    deadline = time.time() + 90
    while time.time() < deadline:
        status, r = infer(port, x)
        assert status == 200, r
        node, pid = r["parameters"]["served_by"].split("/")
        if node == SECOND and int(pid) != victim:
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"no new replica served on {SECOND} within 90 s")


def test_sigterm_ends_the_server_and_removes_its_deployment(server, cluster):
    p = server["process"]
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=90) in (0, -signal.SIGTERM)
    address, env = cluster
    apps = "import json, ray; from ray import serve; ray.init(address=%r, log_to_driver=False); print(json.dumps(list(serve.status().applications)))"
    r = subprocess.run([sys.executable, "-c", apps % address], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "buckets" not in json.loads(r.stdout.strip().splitlines()[-1]), r.stdout


def test_replicas_pinned_to_core_groups(cluster, tmp_path):
    """``--replica-core-groups 2``: each replica's threads all run on one of two core groups of
    its node's CPUs, replicas on one node on different groups, and the numbers stay the local ones."""
    from collections import defaultdict

    from tvmrt.serve.pinning import split
    from test_pinning import thread_cpus

    address, env = cluster
    port, p = start_server("--model", f"pinned={FIXTURES['demo']}", "--ray-address", address, "--replicas", "2",
                           "--replica-core-groups", "2", "--replica-cpus", "0.5", env=env, log=tmp_path / "server.log",
                           timeout=120)
    try:
        x = np.random.RandomState(5).uniform(-1, 1, (1, 1, 16, 16)).astype("float32")
        want = local_demo(x)
        body = {"inputs": [{"name": "data", "shape": [1, 1, 16, 16], "datatype": "FP32", "data": x.reshape(-1).tolist()}]}
        nodes = {}
        deadline = time.time() + 60
        while len(nodes) < 2 and time.time() < deadline:
            status, r = post(port, "/v2/models/pinned/infer", json.dumps(body).encode(), {"Content-Type": "application/json"})
            assert status == 200, r
            y = np.array(r["outputs"][0]["data"], dtype=np.float32).reshape(want.shape)
            assert np.array_equal(y.view(np.uint32), want.view(np.uint32))
            node, pid = r["parameters"]["served_by"].split("/")
            nodes[int(pid)] = node
        assert len(nodes) == 2, nodes
        groups = split(os.sched_getaffinity(0), 2)
        on_node = defaultdict(list)
        for pid, node in nodes.items():
            cpus = {tuple(c) for c in thread_cpus(pid).values()}
            assert len(cpus) == 1 and list(next(iter(cpus))) in groups, (pid, cpus)
            on_node[node].append(cpus.pop())
        assert all(len(set(g)) == len(g) for g in on_node.values()), on_node
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=90)
