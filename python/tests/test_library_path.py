"""TVM_RUNTIME_LIBRARY: a relative path is taken from the current directory (ctypes alone would
drop the "./" and search the loader's path); a directory is refused naming the file expected."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tvmrt

PACKAGE_ROOT = str(Path(tvmrt.__file__).resolve().parents[1])


def _python(code: str, cwd: Path, library: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TVM_RUNTIME_LIBRARY=library, PYTHONPATH=PACKAGE_ROOT)
    env.pop("LD_LIBRARY_PATH", None)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True)


def test_relative_library_path(tmp_path):
    # The library under a directory the loader does not search, named relative to it.
    (tmp_path / "libtvm_runtime.so").symlink_to(Path(tvmrt.library_path).resolve())
    code = "import tvmrt; print(tvmrt.library_path); print(tvmrt.cpu(0))"
    for rel in ["./libtvm_runtime.so", "libtvm_runtime.so"]:
        r = _python(code, tmp_path, rel)
        assert r.returncode == 0, r.stderr
        loaded = Path(r.stdout.splitlines()[0])
        assert loaded.name == "libtvm_runtime.so" and loaded.parent.resolve() == tmp_path.resolve(), loaded
    sub = tmp_path / "sub"
    sub.mkdir()
    r = _python(code, sub, "../libtvm_runtime.so")
    assert r.returncode == 0, r.stderr


def test_directory_names_the_file_it_looked_for(tmp_path):
    r = _python("import tvmrt", tmp_path, ".")
    assert r.returncode != 0
    assert "is a directory" in r.stderr, r.stderr
    assert str(tmp_path / "libtvm_runtime.so") in r.stderr, r.stderr


def test_missing_file_named(tmp_path):
    r = _python("import tvmrt", tmp_path, "./nope.so")
    assert r.returncode != 0
    assert str(tmp_path / "nope.so") in r.stderr, r.stderr
