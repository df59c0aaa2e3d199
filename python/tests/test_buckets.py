"""Bucketed executors over the demo compiled at batch 1, 2, 4 and 8."""

from __future__ import annotations

import numpy as np
import pytest

import tvmrt


@pytest.fixture(scope="module")
def rows(fixtures):
    """Eight images and the batch-1 executor's output for each."""
    rng = np.random.default_rng(7)
    images = rng.random((8, 1, 16, 16), dtype=np.float32)
    lib = tvmrt.load_module(fixtures["demo"])
    m = lib["default"](tvmrt.cpu(0))
    outs = []
    for i in range(8):
        m.set_input("data", images[i : i + 1])
        m.run()
        outs.append(m.get_output(0).numpy()[0])
    return images, np.stack(outs)


def _check(g, images, want):
    for n in range(1, 9):
        g.set_input("data", images[:n])
        bucket = g.current_bucket
        assert g.bucket_input_shape(bucket, 0)[0] == {1: 1, 2: 2, 3: 4, 4: 4}.get(n, 8)
        g.run()
        info = g.output_info(0)
        assert info.shape == (n, 10)
        y = g.get_output(0)
        assert y.shape == (n, 10)
        assert y.numpy().tobytes() == want[:n].tobytes(), f"batch {n}"
        out = np.empty((n, 10), "float32")
        g.get_output(0, out)
        assert out.tobytes() == want[:n].tobytes()


def test_bucketed_from_modules(fixtures, rows):
    images, want = rows
    mods = [tvmrt.load_module(p) for p in fixtures["versions"]]
    g = tvmrt.create_bucketed(mods, tvmrt.cpu(0))
    for m in mods:
        m.free()
    assert isinstance(g, tvmrt.BucketedGraphModule)
    assert g.num_buckets == 4
    assert [g.bucket_input_shape(b, "data") for b in range(4)] == [(b, 1, 16, 16) for b in (1, 2, 4, 8)]
    _check(g, images, want)


def test_bucketed_from_paths_and_manifest(fixtures, rows):
    images, want = rows
    _check(tvmrt.create_bucketed(list(reversed(fixtures["versions"])), options="pad_value=0"), images, want)
    _check(tvmrt.create_bucketed(fixtures["manifest"], tvmrt.cpu(0), options={"intra_op_threads": 1}), images, want)


def test_bucketed_misuse(fixtures, rows):
    images, _ = rows
    g = tvmrt.create_bucketed(fixtures["manifest"])
    big = np.zeros((9, 1, 16, 16), "float32")
    with pytest.raises(tvmrt.TVMError, match="data"):
        g.set_input("data", big)
    with pytest.raises(tvmrt.TVMError):
        g.set_input("data", np.zeros((2, 1, 16, 15), "float32"))
    with pytest.raises(tvmrt.TVMError):
        g.bucket_input_shape(4, 0)
    with pytest.raises(tvmrt.TVMError, match="zero-copy"):
        g.set_input_zero_copy(0, tvmrt.empty_aligned((1, 1, 16, 16)))
    with pytest.raises(tvmrt.TVMError):
        tvmrt.create_bucketed("/no/such/manifest.buckets")
    with pytest.raises(tvmrt.TVMError, match="no versions"):
        tvmrt.create_bucketed([])
    with pytest.raises(tvmrt.TVMError):
        tvmrt.create_bucketed(fixtures["manifest"], options="pad_value=x")
    plain = tvmrt.load_module(fixtures["demo"])["default"](tvmrt.cpu(0))
    with pytest.raises(tvmrt.TVMError):
        tvmrt.BucketedGraphModule(plain).num_buckets
    # still working
    g.set_input("data", images[:3])
    g.run()
    assert g.get_output(0).shape == (3, 10)


def test_bucket_extents():
    assert tvmrt.bucket_extents(1, 8) == [1, 2, 4, 8]
    assert tvmrt.bucket_extents(32, 100, "policy=uniform,step=32") == [32, 64, 96, 100]
    with pytest.raises(tvmrt.TVMError):
        tvmrt.bucket_extents(8, 1)
