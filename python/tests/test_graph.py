"""The demo model end to end through the TVM-style API, against the C API's numbers."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tvmrt
from tvmrt import graph_executor


def test_end_to_end_equals_c_api(demo, cases):
    dev = tvmrt.cpu(0)
    m = graph_executor.GraphModule(demo["default"](dev))
    for x, want, ref in cases:
        m.set_input("data", x)
        m.run()
        y = m.get_output(0)
        assert isinstance(y, tvmrt.NDArray)
        assert y.shape == (1, 10) and y.dtype == "float32" and y.device == dev
        got = y.numpy()
        assert got.tobytes() == want.tobytes(), "bit-identical to the C API"
        np.testing.assert_allclose(got, ref, atol=1e-5)


def test_structure(demo):
    m = demo["default"](tvmrt.cpu(0))
    assert m.get_num_inputs() == 7
    assert m.get_num_outputs() == 1
    shapes, dtypes = m.get_input_info()
    assert shapes == {"data": (1, 1, 16, 16)}
    assert dtypes == {"data": "float32"}
    data = m.data_inputs()
    assert [t.name for t in data] == ["data"] and not data[0].is_param and data[0].index == 0
    params = [t for t in m.inputs() if t.is_param]
    assert [t.name for t in params] == ["p0", "p1", "p2", "p3", "p4", "p5"]
    assert params[0].shape == (8, 1, 3, 3) and params[0].nbytes == 288
    (out,) = m.outputs()
    assert out.shape == (1, 10) and out.dtype == "float32" and out.nbytes == 40
    assert m.get_output_index(out.name) == 0
    assert m.get_input_index("p2") == 3
    oshapes, odtypes = m.get_output_info()
    assert oshapes == {out.name: (1, 10)}


def test_set_input_forms(demo, cases):
    x, want, _ = cases[1]
    m = tvmrt.GraphModule(demo["default"](tvmrt.cpu(0)))
    forms = [
        lambda: m.set_input("data", x),
        lambda: m.set_input(0, x),
        lambda: m.set_input(data=x),
        lambda: m.set_input("data", tvmrt.nd.array(x)),
        lambda: m.set_input("data", x.tolist()),
        lambda: m.set_input("data", np.asfortranarray(x)),
    ]
    for set_it in forms:
        m.set_input("data", np.zeros_like(x))
        set_it()
        m.run()
        assert m.get_output(0).numpy().tobytes() == want.tobytes()
    # run(**inputs) and __call__
    m.run(data=x)
    assert m.get_output(0).numpy().tobytes() == want.tobytes()
    (y,) = m(x)
    assert y.tobytes() == want.tobytes()


def test_get_output_into(demo, cases):
    x, want, _ = cases[2]
    m = tvmrt.GraphModule(demo["default"](tvmrt.cpu(0)))
    m.set_input("data", x)
    m.run()
    out = np.empty((1, 10), "float32")
    assert m.get_output(0, out) is out
    assert out.tobytes() == want.tobytes()
    nd_out = tvmrt.nd.empty((1, 10), "float32")
    assert m.get_output(0, nd_out) is nd_out
    assert nd_out.numpy().tobytes() == want.tobytes()


def test_load_params(demo, demo_path, cases):
    x, want, _ = cases[0]
    blob = (Path(demo_path).parent / "demo_params.bin").read_bytes()
    m = tvmrt.GraphModule(demo["default"](tvmrt.cpu(0)))
    zeros = np.zeros((10,), "float32")
    m.set_input("p5", zeros + 1.0)  # disturb a weight, then reload the blob
    m.run(data=x)
    assert m.get_output(0).numpy().tobytes() != want.tobytes()
    m.load_params(blob)
    m.run(data=x)
    assert m.get_output(0).numpy().tobytes() == want.tobytes()
    m.load_params(bytearray(blob))
    with pytest.raises(tvmrt.TVMError):
        m.load_params(b"not a params blob")
    with pytest.raises(tvmrt.TVMError, match="bytes"):
        m.load_params("p0")


def test_benchmark(demo, cases):
    m = tvmrt.GraphModule(demo["default"](tvmrt.cpu(0)))
    m.set_input("data", cases[0][0])
    r = m.benchmark(tvmrt.cpu(0), repeat=4, number=3)
    assert len(r.results) == 4
    assert r.min <= r.median <= r.max and r.mean > 0 and r.std >= 0
    assert "mean (ms)" in str(r)
    r = m.benchmark(repeat=2, number=1, min_repeat_ms=5, end_to_end=True, data=cases[0][0])
    assert len(r.results) == 2
    assert "tvmgen_default_fused_nn_softmax" in m.profile()
    assert m.profile(chrome_trace=True).lstrip().startswith(("{", "["))


@pytest.mark.parametrize("options", ["inter_op_threads=2,intra_op_threads=1", {"memory_plan": "parallel"}, ""])
def test_options(demo, cases, options):
    x, want, _ = cases[3]
    m = demo["default"](tvmrt.cpu(0), options=options)
    m.run(data=x)
    assert m.get_output(0).numpy().tobytes() == want.tobytes()
    m2 = tvmrt.create(demo, tvmrt.cpu(0), options=options)
    m2.run(data=x)
    assert m2.get_output(0).numpy().tobytes() == want.tobytes()


def test_zero_copy(demo, cases):
    x, want, _ = cases[1]
    m = tvmrt.GraphModule(demo["default"](tvmrt.cpu(0)))
    a = tvmrt.empty_aligned(x.shape, "float32")
    a[...] = x
    out = tvmrt.empty_aligned((1, 10), "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.set_input_zero_copy("data", a)
        m.set_output_zero_copy(0, out)
    m.run()
    assert out.tobytes() == want.tobytes()
    # the executor reads the caller's memory: change it in place and run again
    a[...] = cases[2][0]
    m.run()
    assert out.tobytes() == cases[2][1].tobytes()
    # misaligned: copied, with a warning
    raw = np.zeros(x.size + 1, "float32")
    mis = raw[1:].reshape(x.shape)
    mis[...] = x
    assert not tvmrt.is_aligned(mis)
    with pytest.warns(UserWarning, match="aligned"):
        m.set_input_zero_copy(0, mis)
    m.run()
    assert out.tobytes() == want.tobytes()
    with pytest.raises(tvmrt.TVMError, match="aligned"):
        m.set_output_zero_copy(0, np.zeros(11, "float32")[1:].reshape(1, 10))
    # NDArray inputs and outputs
    nx = tvmrt.nd.array(cases[3][0])
    ny = tvmrt.nd.empty((1, 10))
    m.set_input_zero_copy(0, nx)
    m.set_output_zero_copy(0, ny)
    m.run()
    assert ny.numpy().tobytes() == cases[3][1].tobytes()


def test_module_outlives(demo_path, cases):
    lib = tvmrt.load_module(demo_path)
    m = lib["default"](tvmrt.cpu(0))
    lib.free()
    x, want, _ = cases[0]
    m.run(data=x)
    assert m.get_output(0).numpy().tobytes() == want.tobytes()
    with tvmrt.load_module(demo_path) as lib2:
        assert lib2.implements_function("default")
        assert not lib2.implements_function("no_such_function")


def test_cli(demo_path):
    r = subprocess.run([sys.executable, "-m", "tvmrt", demo_path, "--runs", "3"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "data" in r.stdout and "[1, 1, 16, 16]" in r.stdout and "float32" in r.stdout
    assert "tvmgen_default_fused_nn_softmax" in r.stdout and "1 data, 6 params" in r.stdout
    r = subprocess.run([sys.executable, "-m", "tvmrt", "/no/such/model.so"], capture_output=True, text=True)
    assert r.returncode == 2 and "error" in r.stderr
