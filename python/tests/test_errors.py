"""Misuse raises TVMError with a clear message and leaves the interpreter working."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tvmrt


@pytest.fixture()
def m(demo):
    return demo["default"](tvmrt.cpu(0))


def test_wrong_dtype(m, cases):
    with pytest.raises(tvmrt.TVMError, match=r"dtype float32, got float64"):
        m.set_input("data", cases[0][0].astype("float64"))
    with pytest.raises(tvmrt.TVMError, match="dtype"):
        m.set_input("data", np.zeros((1, 1, 16, 16), "complex64"))
    with pytest.raises(tvmrt.TVMError, match="dtype"):
        m.get_output(0, tvmrt.nd.empty((1, 10), "int32"))


def test_wrong_shape(m, cases):
    with pytest.raises(tvmrt.TVMError, match="shape"):
        m.set_input("data", np.zeros((1, 1, 16, 15), "float32"))
    with pytest.raises(tvmrt.TVMError, match="shape"):
        m.set_input("data", np.zeros((16, 16), "float32"))
    with pytest.raises(tvmrt.TVMError, match="shape"):
        m.get_output(0, np.empty((1, 11), "float32"))
    with pytest.raises(tvmrt.TVMError, match="shape"):
        m.get_output(0, tvmrt.nd.empty((10,)))


def test_wrong_name(m):
    with pytest.raises(tvmrt.TVMError, match="no_such_input") as e:
        m.set_input("no_such_input", np.zeros((1, 1, 16, 16), "float32"))
    assert "data" in str(e.value)  # the message lists the inputs
    with pytest.raises(tvmrt.TVMError):
        m.get_output_index("no_such_output")
    with pytest.raises(tvmrt.TVMError):
        m.set_input(data_typo=np.zeros((1, 1, 16, 16), "float32"))


def test_wrong_index(m):
    x = np.zeros((1, 1, 16, 16), "float32")
    for bad in [7, -1, 1000, 2**40]:
        with pytest.raises(tvmrt.TVMError):
            m.set_input(bad, x)
        with pytest.raises(tvmrt.TVMError):
            m.get_output(bad)
        with pytest.raises(tvmrt.TVMError):
            m.input_info(bad)
    with pytest.raises(tvmrt.TVMError, match="integer"):
        m.get_output("0")
    with pytest.raises(tvmrt.TVMError, match="names"):
        m.set_input(1.5, x)
    with pytest.raises(tvmrt.TVMError, match="names"):
        m.set_input(["data"], x)
    with pytest.raises(tvmrt.TVMError, match="names"):
        m.set_input(True, x)
    with pytest.raises(tvmrt.TVMError, match="integer"):
        m.get_output([0], np.empty((1, 10), "float32"))
    with pytest.raises(tvmrt.TVMError, match="no value"):
        m.set_input("data")
    with pytest.raises(tvmrt.TVMError, match="without a key"):
        m.set_input(value=x)
    with pytest.raises(tvmrt.TVMError):
        m.get_output(0, out="nope")


def test_freed_objects(demo_path, cases):
    lib = tvmrt.load_module(demo_path)
    m = lib["default"](tvmrt.cpu(0))
    m2 = tvmrt.GraphModule(m)  # same executor
    m.free()
    m.free()
    for f in [
        lambda: m.run(),
        lambda: m2.run(),
        lambda: m.set_input("data", cases[0][0]),
        lambda: m.get_output(0),
        lambda: m.get_num_inputs(),
        lambda: m.benchmark(),
        lambda: m.load_params(b""),
    ]:
        with pytest.raises(tvmrt.TVMError, match="freed"):
            f()
    assert "freed" in repr(m)
    lib.free()
    with pytest.raises(tvmrt.TVMError, match="freed"):
        lib["default"](tvmrt.cpu(0))
    with pytest.raises(tvmrt.TVMError, match="freed"):
        tvmrt.create(lib)
    gc.collect()


def test_bad_loads_and_options(demo, tmp_path):
    with pytest.raises(tvmrt.TVMError):
        tvmrt.load_module("/no/such/model.so")
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not an elf file")
    with pytest.raises(tvmrt.TVMError):
        tvmrt.load_module(junk)
    with pytest.raises(tvmrt.TVMError, match="inter_op_threads|bogus"):
        demo["default"](tvmrt.cpu(0), options="bogus_key=1")
    with pytest.raises(tvmrt.TVMError, match="inter_op_threads"):
        demo["default"](tvmrt.cpu(0), options="inter_op_threads=abc")
    with pytest.raises(tvmrt.TVMError):
        demo["default"](tvmrt.device("cuda", 0))
    with pytest.raises(tvmrt.TVMError, match="Device"):
        tvmrt.create(demo, "cpu")
    with pytest.raises(tvmrt.TVMError, match="default"):
        demo["run"]
    with pytest.raises(tvmrt.TVMError, match="Module"):
        tvmrt.create("model.so")
    with pytest.raises(tvmrt.TVMError, match="executor"):
        tvmrt.GraphModule(demo)


def test_still_working_after_errors(m, cases):
    for _ in range(50):
        with pytest.raises(tvmrt.TVMError):
            m.set_input("data", np.zeros(3, "float32"))
    x, want, _ = cases[0]
    m.run(data=x)
    assert m.get_output(0).numpy().tobytes() == want.tobytes()
