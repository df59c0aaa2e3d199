"""Errors by kind, as TVM's Python raises them: the runtime's `Kind: message` gives an exception
that is both that Python exception and a tvmrt.TVMError, with the message after the kind."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

import tvmrt
from tvmrt import error


@pytest.fixture()
def m(demo):
    return demo["default"](tvmrt.cpu(0))


def test_wrong_dtype_is_a_value_error(m, cases):
    try:
        m.set_input("data", cases[0][0].astype("float64"))
    except ValueError as e:
        assert isinstance(e, tvmrt.TVMError)
        assert "float32" in str(e) and "float64" in str(e), str(e)
        assert not str(e).startswith("ValueError"), "the kind is the class, not part of the message"
    else:
        pytest.fail("set_input accepted a float64 array for a float32 input")
    # Refused by the package before the runtime sees it: the same kind.
    with pytest.raises(ValueError, match="complex64"):
        m.set_input("data", np.zeros((1, 1, 16, 16), "complex64"))


def test_runtime_kinds(m, demo):
    with pytest.raises(ValueError, match="shape"):
        m.set_input("data", np.zeros((1, 1, 16, 15), "float32"))
    with pytest.raises(IndexError, match=r"output index 7 out of range \(the graph has 1 output\)"):
        m.get_output(7)
    with pytest.raises(IndexError):
        m.set_input(7, np.zeros((1, 1, 16, 16), "float32"))
    with pytest.raises(TypeError, match="integer"):
        m.get_output("0")
    with pytest.raises(AttributeError, match="run"):
        demo["run"]
    with pytest.raises(OSError):
        tvmrt.load_module("/no/such/model.so")


def test_a_wrong_input_name_is_a_key_error_and_a_runtime_error(m):
    """TVM's Python raises RuntimeError for a name not among the graph's inputs; KeyError says
    what went wrong, and the class is both (a TVMError is a RuntimeError)."""
    x = np.zeros((1, 1, 16, 16), "float32")
    for call in (lambda: m.set_input("image", x), lambda: m.get_input_index("image")):
        with pytest.raises(KeyError) as e:
            call()
        assert isinstance(e.value, RuntimeError) and isinstance(e.value, tvmrt.TVMError)
        assert str(e.value).startswith("graph has no input named `image` (inputs: data, p0, "), str(e.value)


@pytest.mark.parametrize(
    "kind",
    ["ValueError", "TypeError", "IndexError", "KeyError", "AttributeError", "NotImplementedError", "OSError"],
)
def test_each_kind_maps_to_its_python_exception(kind):
    e = error.from_message(f"{kind}: what went wrong: details")
    assert isinstance(e, getattr(builtins, kind)) and isinstance(e, tvmrt.TVMError), type(e).__mro__
    assert str(e) == "what went wrong: details"


def test_other_messages_are_tvm_errors():
    for msg, cls, text in [
        ("TVMError: plain", tvmrt.TVMError, "plain"),
        ("RuntimeError: plain", tvmrt.TVMError, "plain"),
        ("InternalError: panic in f: boom", error.InternalError, "panic in f: boom"),
        ("PythonError: raised in a callback", tvmrt.TVMError, "PythonError: raised in a callback"),
        ("fused_add: bad shape", tvmrt.TVMError, "fused_add: bad shape"),
        ("no kind at all", tvmrt.TVMError, "no kind at all"),
    ]:
        e = error.from_message(msg)
        assert type(e) is cls, (msg, type(e))
        assert str(e) == text
        assert not isinstance(e, (ValueError, TypeError, IndexError, KeyError, AttributeError))


def test_key_error_text_is_not_quoted():
    e = error.from_message("KeyError: no such key `x`")
    assert str(e) == "no such key `x`"


def test_except_tvm_error_still_catches_everything(m):
    for bad in [lambda: m.set_input("data", np.zeros(3, "float32")), lambda: m.get_output(99)]:
        with pytest.raises(tvmrt.TVMError):
            bad()
        with pytest.raises(RuntimeError):
            bad()
