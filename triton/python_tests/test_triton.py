"""The backend in the real tritonserver 2.51 (from nvidia-pytriton), driven by tritonclient over
HTTP and gRPC: the numbers of the runtime's C API for every model kind (graph .so, bucket
manifest, Relax VM), the configuration auto-completed from the model, mismatches and bad files
failing only their own model's load, bad requests answered 400 / INVALID_ARGUMENT, dynamic
batching (fewer executions than requests, each response exact) and instances over one session.

Run by scripts/triton_tests.sh (its venv is cached under target/)."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from harness import (FIXTURES, RELAX, RELAX018, SEQ_GRID, Server, add_model, bucket_files, failure_trio,
                     seq_grid_files, write_manifest)

OUTPUT = "tvmgen_default_fused_nn_softmax"
CASES = FIXTURES["cases"]


def image(case) -> np.ndarray:
    return np.array(case["input_bits"], dtype=np.uint32).view(np.float32).reshape(1, 1, 16, 16)


def expected(case) -> np.ndarray:
    return np.array(case["capi_output_bits"], dtype=np.uint32)


STATED = """
input [ { name: "data" data_type: TYPE_FP32 dims: [ 1, 1, 16, 16 ] } ]
output [ { name: "tvmgen_default_fused_nn_softmax" data_type: TYPE_FP32 dims: [ 1, 10 ] } ]
"""


# The sequence block (tokens [-1, 32] per request row) with Triton's ragged batching: requests
# of different lengths are batched by the server, and the backend runs each length apart.
RAGGED = """
max_batch_size: 4
input [ { name: "tokens" data_type: TYPE_FP32 dims: [ -1, 32 ] allow_ragged_batch: true } ]
dynamic_batching { max_queue_delay_microseconds: 1000000 }
"""
# Triton forms a batch of 3 rows (not a bucket: it runs in the batch-4 bucket) at once; fewer
# rows wait for the queue delay. (Triton checks the preferred size against max_batch_size before
# the backend completes the configuration: it is stated.)
PREFERRED = "max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 3 ] max_queue_delay_microseconds: 1500000 }\n"
BATCH_INPUT = """
batch_input [ { kind: BATCH_ACCUMULATED_ELEMENT_COUNT target_name: "index" data_type: TYPE_FP32 source_input: "tokens" } ]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("triton")
    repo = work / "models"
    demo = {"model.so": FIXTURES["demo"]}
    add_model(repo, "demo", demo)
    add_model(repo, "demo_stated", demo, STATED)
    add_model(repo, "demo_two", demo, 'instance_group [ { kind: KIND_CPU, count: 2 } ]\n')
    add_model(repo, "demo_named", {"demo.so": FIXTURES["demo"]}, 'default_model_filename: "demo.so"\n')
    write_manifest(add_model(repo, "buckets", bucket_files(), "dynamic_batching { max_queue_delay_microseconds: 300000 }\n"))
    demo_dir = Path(FIXTURES["demo"]).parent
    add_model(repo, "legacy", {"graph.json": demo_dir / "demo_graph.json", "params.bin": demo_dir / "demo_params.bin",
                               "model.so": FIXTURES["demo"]})
    add_model(repo, "mlp", {"model.so": RELAX / "mlp/lib.so"})
    add_model(repo, "mlp018", {"model.so": RELAX018 / "mlp/lib.so"})
    add_model(repo, "second", {"model.so": RELAX / "two_funcs/lib.so"}, 'parameters { key: "function" value { string_value: "second" } }\n')
    failure_trio(add_model(repo, "failing", {}))
    add_model(repo, "bad_file", {"model.so": RELAX / "README.md"})
    add_model(repo, "no_file", {})
    add_model(repo, "bad_shape", demo, STATED.replace("dims: [ 1, 1, 16, 16 ]", "dims: [ 1, 1, 8, 32 ]"))
    add_model(repo, "bad_dtype", demo, STATED.replace("TYPE_FP32 dims: [ 1, 1, 16", "TYPE_INT32 dims: [ 1, 1, 16"))
    add_model(repo, "bad_name", demo, STATED.replace('name: "data"', 'name: "image"'))
    add_model(repo, "bad_batch", demo, "max_batch_size: 8\n")
    add_model(repo, "demo_pipeline", demo, params(core_groups="2", threads_per_group="1"))
    add_model(repo, "demo_pipeline_stated", demo, STATED + params(core_groups="2"))
    add_model(repo, "bad_groups", demo, params(core_groups="0"))
    add_model(repo, "bad_per_group", demo, params(core_groups="1", threads_per_group="many"))
    add_model(repo, "bad_pin", demo, params(pin="yes"))
    add_model(repo, "bad_pin_count", demo, params(pin="1") + f"instance_group [ {{ kind: KIND_CPU, count: {len(os.sched_getaffinity(0)) + 1} }} ]\n")
    write_manifest(add_model(repo, "bad_pipeline_buckets", bucket_files(), params(core_groups="1")))
    write_manifest(add_model(repo, "buckets_preferred", bucket_files(), PREFERRED))
    add_model(repo, "seqgrid", seq_grid_files())
    add_model(repo, "seqgrid_ragged", seq_grid_files(), RAGGED)
    add_model(repo, "bad_batch_input", seq_grid_files(), RAGGED + BATCH_INPUT)
    s = Server(repo, work)
    yield s
    assert s.stop() == 0, s.log.read_text()[-3000:]


def params(**pairs: str) -> str:
    """A configuration's `parameters` entries."""
    return "".join(f'parameters {{ key: "{k}" value {{ string_value: "{v}" }} }}\n' for k, v in pairs.items())


def infer_http(s: Server, model: str, x: np.ndarray, name="data", datatype="FP32"):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{s.http}")
    inp = httpclient.InferInput(name, list(x.shape), datatype)
    inp.set_data_from_numpy(x, binary_data=True)
    return client.infer(model, [inp])


def infer_grpc(s: Server, model: str, x: np.ndarray, name="data"):
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{s.grpc}")
    inp = grpcclient.InferInput(name, list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    return client.infer(model, [inp])


def assert_exact(got: np.ndarray, want_bits: np.ndarray, what: str) -> None:
    got = np.ascontiguousarray(got, dtype=np.float32).reshape(-1)
    assert np.array_equal(got.view(np.uint32), want_bits), (what, got, want_bits.view(np.float32))


@pytest.mark.parametrize("model", ["demo", "demo_stated", "demo_named", "legacy"])
def test_graph_so_gives_the_runtimes_numbers_over_http_and_grpc(server, model):
    for case in CASES:
        x = image(case)
        assert_exact(infer_http(server, model, x).as_numpy(OUTPUT), expected(case), f"{model} http seed {case['seed']}")
        assert_exact(infer_grpc(server, model, x).as_numpy(OUTPUT), expected(case), f"{model} grpc seed {case['seed']}")


def test_config_is_completed_from_the_model(server):
    demo = server.get("/v2/models/demo/config")
    assert demo["max_batch_size"] == 0
    assert [(t["name"], t["data_type"], [int(d) for d in t["dims"]]) for t in demo["input"]] == [("data", "TYPE_FP32", [1, 1, 16, 16])]
    assert [(t["name"], [int(d) for d in t["dims"]]) for t in demo["output"]] == [(OUTPUT, [1, 10])]
    buckets = server.get("/v2/models/buckets/config")
    assert buckets["max_batch_size"] == 8
    assert [int(d) for d in buckets["input"][0]["dims"]] == [1, 16, 16]
    meta = server.get("/v2/models/buckets")
    assert meta["inputs"] == [{"name": "data", "datatype": "FP32", "shape": [-1, 1, 16, 16]}]
    mlp = server.get("/v2/models/mlp")
    assert mlp["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [4, 32]}]
    assert mlp["outputs"] == [{"name": "output_0", "datatype": "FP32", "shape": [4, 10]}]


def test_bad_models_fail_their_own_load_with_the_reason(server):
    index = {m["name"]: m for m in server.post("/v2/repository/index")}
    reasons = {
        "bad_file": "model.so",
        "no_file": "no model file",
        "bad_shape": "input 'data': shape [1, 1, 8, 32] in the configuration, the model's is [1, 1, 16, 16]",
        "bad_dtype": "input 'data': data_type TYPE_INT32 in the configuration, the model's is TYPE_FP32",
        "bad_name": "the model's input 'data' is missing from the configuration's inputs",
        "bad_batch": "max_batch_size 8 is more than the largest batch the model runs (1)",
        "bad_groups": "parameter `core_groups`",
        "bad_per_group": "parameter `threads_per_group`",
        "bad_pin": "parameter `pin`: `yes` is not 0 or 1",
        "bad_pin_count": "parameter `pin`",
        "bad_pipeline_buckets": "parameter `core_groups`: the request pipeline runs plain graph models",
        "bad_batch_input": "batch_input 'index'",
    }
    for name, reason in reasons.items():
        assert index[name]["state"] == "UNAVAILABLE", index[name]
        assert reason in index[name]["reason"], index[name]
    for name in ("demo", "buckets", "mlp", "legacy", "failing", "demo_pipeline", "demo_pipeline_stated", "seqgrid",
                 "seqgrid_ragged"):
        assert index[name]["state"] == "READY", index[name]
    assert "bad_shape" in server.log.read_text()


def test_wrong_datatype_or_shape_is_invalid_argument(server):
    for x, datatype in [(np.zeros((1, 1, 16, 16), np.int64), "INT64"), (np.zeros((1, 1, 8, 32), np.float32), "FP32")]:
        with pytest.raises(InferenceServerException) as e:
            infer_http(server, "demo", x, datatype=datatype)
        assert e.value.status() == "400", e.value
        with pytest.raises(InferenceServerException) as e:
            client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc}")
            inp = grpcclient.InferInput("data", list(x.shape), datatype)
            inp.set_data_from_numpy(x)
            client.infer("demo", [inp])
        assert e.value.status() == "StatusCode.INVALID_ARGUMENT", e.value
    assert_exact(infer_http(server, "demo", image(CASES[0])).as_numpy(OUTPUT), expected(CASES[0]), "after bad requests")


def test_relax_vm_library_gives_tvms_numbers(server):
    x = np.fromfile(RELAX / "mlp/main0_in0.bin", dtype=np.float32).reshape(4, 32)
    want = np.fromfile(RELAX / "mlp/main0_out0.bin", dtype=np.float32).reshape(4, 10)
    for result in (infer_http(server, "mlp", x, name="x"), infer_grpc(server, "mlp", x, name="x")):
        np.testing.assert_allclose(result.as_numpy("output_0"), want, rtol=1e-5, atol=1e-6)


def test_relax_vm_of_tvm_018_and_a_function_named_by_parameter(server):
    x = np.fromfile(RELAX018 / "mlp/input_0.bin", dtype=np.float32).reshape(4, 32)
    want = np.fromfile(RELAX018 / "mlp/output_0.bin", dtype=np.float32).reshape(4, 10)
    np.testing.assert_allclose(infer_grpc(server, "mlp018", x, name="x").as_numpy("output_0"), want, rtol=1e-5, atol=1e-6)
    folder = RELAX / "two_funcs"
    a = np.fromfile(folder / "second0_in0.bin", dtype=np.float32).reshape(4, 8)
    b = np.fromfile(folder / "second0_in1.bin", dtype=np.float32).reshape(8, 3)
    want = np.fromfile(folder / "second0_out0.bin", dtype=np.float32).reshape(4, 3)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http}")
    inputs = [httpclient.InferInput("a", [4, 8], "FP32"), httpclient.InferInput("b", [8, 3], "FP32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    np.testing.assert_allclose(client.infer("second", inputs).as_numpy("output_0"), want, rtol=1e-5, atol=1e-6)


def stats(server: Server, model: str):
    return server.get(f"/v2/models/{model}/stats")["model_stats"][0]


def test_dynamic_batching_runs_fewer_times_and_each_request_gets_its_rows(server):
    """8 concurrent requests of 1 or 2 rows on the bucket set: Triton batches them (up to 8 rows),
    the backend runs each batch once in the smallest bucket holding it, and every response is
    bit-identical to the C API's numbers for its own image."""
    before = stats(server, "buckets")
    jobs = []
    for k in range(8):
        seeds = [CASES[k % 4]] if k % 2 == 0 else [CASES[k % 4], CASES[(k + 1) % 4]]
        jobs.append((np.concatenate([image(c) for c in seeds]), seeds))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda j: infer_grpc(server, "buckets", j[0]).as_numpy(OUTPUT), jobs))
    for (x, seeds), y in zip(jobs, results):
        assert y.shape == (len(seeds), 10)
        for row, case in enumerate(seeds):
            assert_exact(y[row], expected(case), f"seed {case['seed']} in a batch")
    # Triton records a request's statistics after its response goes out: wait (bounded) until
    # all eight are counted before comparing.
    deadline = time.monotonic() + 5
    while True:
        after = stats(server, "buckets")
        requests = int(after["inference_stats"]["success"]["count"]) - int(before["inference_stats"]["success"]["count"])
        if requests >= 8 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    executions = int(after["execution_count"]) - int(before["execution_count"])
    rows = int(after["inference_count"]) - int(before["inference_count"])
    assert requests == 8 and rows == 12, after
    assert 0 < executions < requests, after


def seq_tokens(*cases) -> np.ndarray:
    """The cases' tokens (all of one length) as one request, a row each."""
    return np.stack([np.array(c["tokens_bits"], np.uint32).view(np.float32).reshape(c["len"], 32) for c in cases])


def seq_cases(length: int):
    return [c for c in SEQ_GRID["cases"] if c["len"] == length]


def infer_seq(s: Server, model: str, x: np.ndarray):
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{s.grpc}")
    inp = grpcclient.InferInput("tokens", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    result = client.infer(model, [inp])
    return result.as_numpy("tvmgen_default_fused_nn_dense_add_add_1"), result.as_numpy(SEQ_ATTN)


SEQ_ATTN = "tvmgen_default_fused_nn_batch_matmul_divide_where_nn_softmax"


def assert_seq_exact(got, cases, what: str) -> None:
    """Each row of a sequence request's outputs is the C API's numbers for that sequence alone."""
    out, attn = got
    length = cases[0]["len"]
    assert out.shape == (len(cases), length, 32) and attn.shape == (len(cases), length, length), (what, out.shape)
    for row, case in enumerate(cases):
        assert_exact(out[row], np.array(case["out_bits"], np.uint32), f"{what}: out of seed {case['seed']}")
        assert_exact(attn[row], np.array(case["attn_bits"], np.uint32), f"{what}: attn of seed {case['seed']}")


def counted(server: Server, model: str, before, requests: int):
    """The model's statistics once `requests` more have been counted (Triton records a request
    after its response goes out), as (requests, executions, rows) since `before`."""
    deadline = time.monotonic() + 5
    while True:
        after = stats(server, model)
        done = int(after["inference_stats"]["success"]["count"]) - int(before["inference_stats"]["success"]["count"])
        if done >= requests or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    executions = int(after["execution_count"]) - int(before["execution_count"])
    return done, executions, int(after["inference_count"]) - int(before["inference_count"])


def test_a_bucket_set_over_batch_and_length_serves_each_length_exactly(server):
    """The sequence block compiled at batch 1, 2, 4 by length 4, 8: the configuration completed
    with max_batch_size 4 and the free length; requests of every length (padded into the
    smallest bucket that holds them) give the C API's numbers of the version built for exactly
    their length."""
    config = server.get("/v2/models/seqgrid/config")
    assert config["max_batch_size"] == 4 and "dynamic_batching" in config, config
    assert [(t["name"], [int(d) for d in t["dims"]]) for t in config["input"]] == [("tokens", [-1, 32])]
    for length in (2, 3, 5, 7):
        cases = seq_cases(length)
        assert_seq_exact(infer_seq(server, "seqgrid", seq_tokens(*cases)), cases, f"length {length}, two rows")
        for case in cases:
            assert_seq_exact(infer_seq(server, "seqgrid", seq_tokens(case)), [case], f"length {length} alone")


def test_a_ragged_batch_runs_each_shape_apart_and_every_request_gets_its_own_numbers(server):
    """allow_ragged_batch: Triton batches requests whose lengths differ. The backend never joins
    tensors of different shapes: it runs the requests of each shape as one batch, so four
    requests of four lengths are four runs, and two pairs of lengths are two; every response is
    bit-identical to its sequence alone."""
    firsts = [seq_cases(length)[0] for length in (2, 3, 5, 7)]
    pairs = seq_cases(3) + seq_cases(5)
    for cases, runs in ((firsts, 4), (pairs, 2)):
        before = stats(server, "seqgrid_ragged")
        with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
            results = list(pool.map(lambda c: infer_seq(server, "seqgrid_ragged", seq_tokens(c)), cases))
        for case, got in zip(cases, results):
            assert_seq_exact(got, [case], f"length {case['len']} in a ragged batch")
        requests, executions, rows = counted(server, "seqgrid_ragged", before, len(cases))
        assert (requests, rows) == (len(cases), len(cases)), stats(server, "seqgrid_ragged")
        assert executions == runs, stats(server, "seqgrid_ragged")


def batch_sizes(server: Server, model: str):
    """Runs per batch size (Triton's batch statistics, from the backend's report of each run)."""
    return {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in stats(server, model).get("batch_stats", [])}


def send_at_once(server: Server, model: str, cases):
    """One-row requests sent together; each answer checked exact, with its wait in seconds."""

    def timed(case):
        t = time.monotonic()
        y = infer_grpc(server, model, image(case)).as_numpy(OUTPUT)
        assert_exact(y, expected(case), f"seed {case['seed']} through {model}")
        return time.monotonic() - t

    with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
        return sorted(pool.map(timed, cases))


def batches_grown(server: Server, model: str, before):
    """The runs per batch size added since `before` (Triton reports them after the responses)."""
    deadline = time.monotonic() + 5
    while (after := batch_sizes(server, model)) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    return after, {size: n - before.get(size, 0) for size, n in after.items() if n != before.get(size, 0)}


def test_preferred_batch_size_goes_at_once_and_the_rest_waits_for_the_queue_delay(server):
    """preferred_batch_size [3], max_queue_delay 1.5 s. Three one-row requests at once: Triton
    sends them as soon as they are queued (a batch of 3, run in the batch-4 bucket). Then two at
    once: they wait for the queue delay (a batch of 2). Each response is exact. (The two phases
    are apart: five requests at once may reach the scheduler three, then two, or four at once,
    as the machine's load has it.)"""
    model = "buckets_preferred"
    before = batch_sizes(server, model)
    waits = send_at_once(server, model, CASES[:3])
    assert max(waits) < 1.0, waits
    before, grown = batches_grown(server, model, before)
    assert grown == {3: 1}, (before, grown)
    waits = send_at_once(server, model, CASES[:2])
    assert min(waits) >= 1.4, waits
    _, grown = batches_grown(server, model, before)
    assert grown == {2: 1}, (before, grown)


def test_two_instances_share_the_model_and_both_answer_exactly(server):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda c: infer_http(server, "demo_two", image(c)).as_numpy(OUTPUT), CASES * 4))
    for case, y in zip(CASES * 4, results):
        assert_exact(y, expected(case), f"demo_two seed {case['seed']}")
    config = server.get("/v2/models/demo_two/config")
    assert config["instance_group"][0]["count"] == 2


def test_a_failing_kernel_fails_its_request_and_the_instance_keeps_serving(server):
    good = np.arange(16, dtype=np.float32).reshape(1, 16) * 0.5
    for k in range(2):
        y = infer_http(server, "failing", good, name="x").as_numpy("add_one_node")
        assert np.array_equal(y, 2 * good + 1)
        bad = good.copy()
        bad[0, 3] = -1.0
        with pytest.raises(InferenceServerException) as e:
            infer_http(server, "failing", bad, name="x")
        assert "fs_double_checked: negative input -1 at index 3" in str(e.value), e.value
        bad[0, 3] = np.nan
        with pytest.raises(InferenceServerException) as e:
            infer_grpc(server, "failing", bad, name="x")
        assert "node `add_one_node`: kernel returned -1" in str(e.value), e.value
    assert np.array_equal(infer_grpc(server, "failing", good, name="x").as_numpy("add_one_node"), 2 * good + 1)
    # A backend reports a request's statistics after sending its response (as Triton's own
    # backends do), so the last ones may land a moment after the client has its answer.
    deadline = time.monotonic() + 10
    while True:
        s = stats(server, "failing")["inference_stats"]
        counted = int(s["fail"]["count"]) >= 4 and int(s["success"]["count"]) >= 3
        if counted or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert counted, s


def proc_status(pid: int):
    """Threads and resident kB of a process."""
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0])


def test_explicit_unload_and_reload_100_times_leaks_no_threads_or_memory(tmp_path):
    repo = tmp_path / "models"
    add_model(repo, "demo", {"model.so": FIXTURES["demo"]})
    write_manifest(add_model(repo, "buckets", bucket_files()))
    s = Server(repo, tmp_path, "--model-control-mode=explicit", "--load-model=demo", "--load-model=buckets")
    try:
        def cycle():
            for model in ("demo", "buckets"):
                s.post(f"/v2/repository/models/{model}/unload")
                s.post(f"/v2/repository/models/{model}/load")
            assert_exact(infer_grpc(s, "demo", image(CASES[1])).as_numpy(OUTPUT), expected(CASES[1]), "reloaded")
            assert_exact(infer_http(s, "buckets", image(CASES[2])).as_numpy(OUTPUT), expected(CASES[2]), "reloaded")

        for _ in range(10):
            cycle()
        threads, rss = proc_status(s.process.pid)
        for _ in range(90):
            cycle()
        threads_after, rss_after = proc_status(s.process.pid)
        assert threads_after <= threads, (threads, threads_after)
        assert rss_after - rss < 8 * 1024, f"RSS grew from {rss} kB to {rss_after} kB over 90 reloads"
    finally:
        assert s.stop() == 0, s.log.read_text()[-3000:]


def test_sigterm_with_a_request_in_flight_answers_it_then_stops(tmp_path):
    repo = tmp_path / "models"
    write_manifest(add_model(repo, "buckets", bucket_files(), "dynamic_batching { max_queue_delay_microseconds: 1000000 }\n"))
    s = Server(repo, tmp_path)
    result = {}
    pending = threading.Thread(target=lambda: result.update(y=infer_grpc(s, "buckets", image(CASES[3])).as_numpy(OUTPUT)))
    pending.start()
    time.sleep(0.3)  # accepted, and waiting for its batch to fill
    s.process.send_signal(signal.SIGTERM)
    pending.join(timeout=60)
    assert_exact(result["y"], expected(CASES[3]), "in flight at SIGTERM")
    assert s.process.wait(timeout=60) == 0, s.log.read_text()[-3000:]


def test_four_instances_hold_one_copy_of_the_weights(tmp_path):
    """The wide model (8 MB of weights): the server's RSS with 4 instances is within half a copy
    of the weights of its RSS with 1 (a copy per instance would add 3 copies: 24 MB)."""
    wide = Path(FIXTURES["demo"]).parent / "wide_model.so"
    weights_kb = (Path(FIXTURES["demo"]).parent / "wide_params.bin").stat().st_size // 1024
    x = np.full((1, 1, 64, 64), 0.25, np.float32)
    rss = {}
    for count in (1, 4):
        work = tmp_path / f"n{count}"
        add_model(work / "models", "wide", {"model.so": wide}, f"instance_group [ {{ kind: KIND_CPU, count: {count} }} ]\n")
        s = Server(work / "models", work)
        try:
            with concurrent.futures.ThreadPoolExecutor(count) as pool:
                outs = list(pool.map(lambda _: infer_http(s, "wide", x).as_numpy(OUTPUT), range(4 * count)))
            assert all(np.array_equal(o, outs[0]) for o in outs)
            rss[count] = proc_status(s.process.pid)[1]
        finally:
            assert s.stop() == 0
    assert rss[4] - rss[1] < weights_kb // 2, (rss, weights_kb)


def test_the_pipeline_gives_the_same_numbers_as_without_it(server):
    """core_groups=2: a batch Triton hands the instance runs its rows at once over two core
    groups; every response is bit-identical to the same model without the pipeline."""
    config = server.get("/v2/models/demo_pipeline/config")
    assert config["max_batch_size"] == 4 and "dynamic_batching" in config, config
    jobs = CASES * 6
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        piped = list(pool.map(lambda c: infer_grpc(server, "demo_pipeline", image(c)).as_numpy(OUTPUT), jobs))
        plain = list(pool.map(lambda c: infer_grpc(server, "demo", image(c)).as_numpy(OUTPUT), jobs))
    for case, y, z in zip(jobs, piped, plain):
        assert np.array_equal(y.reshape(-1).view(np.uint32), z.reshape(-1).view(np.uint32)), case["seed"]
        assert_exact(y, expected(case), f"demo_pipeline seed {case['seed']}")
    two = np.concatenate([image(CASES[0]), image(CASES[3])])
    y = infer_http(server, "demo_pipeline", two).as_numpy(OUTPUT)
    assert y.shape == (2, 10)
    assert_exact(y[0], expected(CASES[0]), "row 0 of a two-row request")
    assert_exact(y[1], expected(CASES[3]), "row 1 of a two-row request")
    for case in CASES:
        assert_exact(infer_http(server, "demo_pipeline_stated", image(case)).as_numpy(OUTPUT), expected(case), "stated")


def worker_threads(pid: int):
    """The runtime's kernel workers of a process: each one's allowed CPUs (as /proc shows them)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if not (task / "comm").read_text().startswith("tvm-worker"):
                continue
            fields = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines() if ":" in line)
            out.append(fields["Cpus_allowed_list"].strip())
        except FileNotFoundError:  # the thread ended meanwhile
            pass
    return out


def test_pinned_instances_run_their_kernels_on_their_own_cpus(tmp_path):
    """pin=1 with two instances: the process's CPUs split between them, each instance's kernel
    workers pinned to its half; with the pipeline (one instance, two core groups), each group's
    workers to its share. Numbers unchanged; a burst of requests starts no more workers."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("pinning to distinct core groups needs 2 CPUs")
    repo = tmp_path / "models"
    demo = {"model.so": FIXTURES["demo"]}
    add_model(repo, "pinned", demo, params(pin="1", intra_op_threads="2") + "instance_group [ { kind: KIND_CPU, count: 2 } ]\n")
    add_model(repo, "pinned_pipeline", demo, params(pin="1", core_groups="2", threads_per_group="2"))
    s = Server(repo, tmp_path)
    try:
        def burst():
            jobs = [(m, c) for m in ("pinned", "pinned_pipeline") for c in CASES * 4]
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                outs = list(pool.map(lambda j: infer_grpc(s, j[0], image(j[1])).as_numpy(OUTPUT), jobs))
            for (m, case), y in zip(jobs, outs):
                assert_exact(y, expected(case), f"{m} seed {case['seed']}")

        burst()
        workers = worker_threads(s.process.pid)
        full = f"{allowed[0]}-{allowed[-1]}" if allowed == list(range(allowed[0], allowed[-1] + 1)) else None
        assert workers and all(w != full for w in workers), (workers, allowed)
        assert len(set(workers)) >= 2, workers
        threads = proc_status(s.process.pid)[0]
        for _ in range(3):
            burst()
        assert sorted(worker_threads(s.process.pid)) == sorted(workers)
        assert proc_status(s.process.pid)[0] <= threads + len(allowed), (threads, proc_status(s.process.pid))
    finally:
        assert s.stop() == 0, s.log.read_text()[-3000:]
