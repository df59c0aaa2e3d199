"""NDArray creation and copies, and DLPack both ways with numpy (and torch when installed)."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import tvmrt
from tvmrt import nd


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "uint16"])
def test_array_roundtrip(dtype):
    x = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    a = nd.array(x)
    assert a.shape == (2, 3, 4) and a.dtype == dtype and a.ndim == 3 and a.size == 24
    assert a.device == tvmrt.cpu(0) and repr(a.device) == "cpu(0)"
    assert a.nbytes == x.nbytes
    assert a.data_ptr % 64 == 0
    y = a.numpy()
    assert y.dtype == x.dtype and np.array_equal(x, y)
    assert np.array_equal(np.asarray(a), x)
    assert "NDArray" in repr(a)


def test_empty_copyfrom_copyto():
    a = nd.empty((3, 5), "float32")
    assert a.shape == (3, 5) and a.dtype == "float32"
    x = np.random.default_rng(0).random((3, 5), dtype=np.float32)
    a.copyfrom(x)
    out = np.empty_like(x)
    a.copyto(out)
    assert np.array_equal(out, x)
    b = a.copyto(tvmrt.cpu(0))
    assert b.data_ptr != a.data_ptr and np.array_equal(b.numpy(), x)
    c = nd.empty((3, 5))
    a.copyto(c)
    assert np.array_equal(c.numpy(), x)
    assert np.array_equal(nd.array(a).numpy(), x)
    assert nd.empty(4).shape == (4,)
    assert nd.empty((), "int32").shape == ()
    with pytest.raises(tvmrt.TVMError, match="shape"):
        a.copyfrom(np.zeros((5, 3), "float32"))
    with pytest.raises(tvmrt.TVMError, match="dtype"):
        a.copyfrom(np.zeros((3, 5), "float64"))
    with pytest.raises(tvmrt.TVMError, match="dtype"):
        nd.empty((2,), "complex64")
    with pytest.raises(tvmrt.TVMError, match="negative"):
        nd.empty((2, -1))


def test_devices():
    assert tvmrt.device("cpu", 0) == tvmrt.cpu(0)
    assert tvmrt.device(1) == tvmrt.cpu()
    assert hash(tvmrt.cpu(0)) == hash(tvmrt.device("cpu"))
    with pytest.raises(tvmrt.TVMError, match="unknown device"):
        tvmrt.device("tpu")
    # the runtime has the CPU only: other devices are errors naming them, not crashes
    with pytest.raises(tvmrt.TVMError):
        nd.empty((2,), "float32", tvmrt.device("cuda", 0))


def test_empty_aligned():
    for shape, dt in [((3, 7), "float32"), ((5,), "int8"), ((2, 2, 2), "float64")]:
        a = tvmrt.empty_aligned(shape, dt)
        assert a.shape == shape and a.dtype == np.dtype(dt) and a.flags.c_contiguous
        assert tvmrt.is_aligned(a) and a.__array_interface__["data"][0] % 64 == 0
    assert tvmrt.is_aligned(tvmrt.empty_aligned(10, "uint8", alignment=256), 256)


def test_from_dlpack_numpy_is_zero_copy():
    x = tvmrt.empty_aligned((4, 4), "float32")
    x[...] = np.arange(16, dtype=np.float32).reshape(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = tvmrt.from_dlpack(x)
    assert a.data_ptr == x.__array_interface__["data"][0]
    x[0, 0] = 42.0
    assert a.numpy()[0, 0] == 42.0
    del x
    gc.collect()
    assert a.numpy()[0, 0] == 42.0  # the NDArray keeps the numpy memory alive
    a.free()


def test_to_numpy_dlpack_is_zero_copy():
    a = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert a.__dlpack_device__() == (1, 0)
    v = np.from_dlpack(a)
    assert v.__array_interface__["data"][0] == a.data_ptr
    new = np.arange(6, dtype=np.float32).reshape(2, 3)
    new[1, 2] = -1.0
    a.copyfrom(new)  # written by the runtime, seen through the numpy view
    assert v[1, 2] == -1.0
    del a
    gc.collect()
    assert v[1, 2] == -1.0 and v[0, 1] == 1.0  # the view keeps the runtime's memory alive
    del v
    gc.collect()


def test_dlpack_roundtrip_and_unused_capsules():
    x = tvmrt.empty_aligned((8,), "int32")
    x[...] = np.arange(8)
    a = tvmrt.from_dlpack(x)
    b = tvmrt.from_dlpack(a.__dlpack__())  # a capsule of ours, back into an NDArray
    assert b.data_ptr == a.data_ptr and np.array_equal(b.numpy(), np.arange(8))
    for _ in range(1000):
        cap = a.__dlpack__()  # never consumed: its destructor frees it
        del cap
    c = np.from_dlpack(b)
    assert c.__array_interface__["data"][0] == x.__array_interface__["data"][0]
    del a, b
    gc.collect()
    assert np.array_equal(c, np.arange(8))
    with pytest.raises(tvmrt.TVMError, match="DLPack"):
        tvmrt.from_dlpack(42)


def test_from_dlpack_misaligned_copies_with_warning():
    raw = np.arange(17, dtype=np.float32)
    x = raw[1:]
    assert not tvmrt.is_aligned(x)
    with pytest.warns(UserWarning, match="aligned"):
        a = tvmrt.from_dlpack(x)
    assert np.array_equal(a.numpy(), x) and a.data_ptr % 64 == 0
    with pytest.raises(tvmrt.TVMError, match="aligned"):
        tvmrt.from_dlpack(x, copy_if_misaligned=False)


def test_freed_ndarray_raises():
    a = nd.array(np.zeros(3, "float32"))
    a.free()
    a.free()
    assert "freed" in repr(a)
    for f in [lambda: a.shape, lambda: a.numpy(), lambda: a.__dlpack__(), lambda: a.dtype]:
        with pytest.raises(tvmrt.TVMError, match="freed"):
            f()


def test_torch_dlpack():
    torch = pytest.importorskip("torch")
    t = torch.arange(64, dtype=torch.float32)
    a = tvmrt.from_dlpack(t) if t.data_ptr() % 64 == 0 else None
    if a is not None:
        assert a.data_ptr == t.data_ptr()
    b = nd.array(np.arange(4, dtype=np.float32))
    tt = torch.from_dlpack(b)
    assert tt.data_ptr() == b.data_ptr
    assert tt.tolist() == [0.0, 1.0, 2.0, 3.0]
