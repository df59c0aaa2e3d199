"""docs/python.md's first example runs as written, from the root of the checkout, on the demo's
files (``cargo run --release --example demo`` writes them)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_first_example_of_docs_python_md_runs(monkeypatch, capsys):
    text = (REPO / "docs" / "python.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    for name in ("demo_model.so", "demo_params.bin"):
        if not (REPO / "target" / "demo" / name).is_file():
            pytest.skip(f"target/demo/{name} is missing: run `cargo run --release --example demo` first")
    monkeypatch.chdir(REPO)
    scope: dict = {}
    exec(compile(code, "docs/python.md", "exec"), scope)
    assert scope["y"].shape == (1, 10) and abs(float(scope["y"].sum()) - 1.0) < 1e-5  # softmax
    assert "median" in capsys.readouterr().out  # the benchmark's summary was printed
