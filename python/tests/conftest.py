"""Fixtures: the models and expected numbers `cargo run --release --example python_fixtures`
writes to target/demo/ (built here when missing)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def _fixtures_path() -> Path:
    env = os.environ.get("TVMRT_FIXTURES")
    if env:
        return Path(env)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    if not target.is_absolute():
        target = REPO / target
    return target / "demo" / "python_fixtures.json"


@pytest.fixture(scope="session")
def fixtures() -> dict:
    path = _fixtures_path()
    if not path.is_file():
        subprocess.run(
            ["cargo", "run", "--release", "--quiet", "--example", "python_fixtures"], cwd=REPO, check=True
        )
    with open(path) as f:
        return json.load(f)


def bits_to_f32(bits, shape=None) -> np.ndarray:
    a = np.array(bits, dtype=np.uint32).view(np.float32)
    return a.reshape(shape) if shape is not None else a


@pytest.fixture(scope="session")
def demo_path(fixtures) -> str:
    return fixtures["demo"]


@pytest.fixture(scope="session")
def cases(fixtures):
    """(input [1,1,16,16], C API output [1,10], reference output [1,10]) per seed."""
    return [
        (
            bits_to_f32(c["input_bits"], (1, 1, 16, 16)),
            bits_to_f32(c["capi_output_bits"], (1, 10)),
            bits_to_f32(c["reference_output_bits"], (1, 10)),
        )
        for c in fixtures["cases"]
    ]


@pytest.fixture()
def demo(demo_path):
    import tvmrt

    lib = tvmrt.load_module(demo_path)
    yield lib
    lib.free()
