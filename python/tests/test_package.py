"""The installed package: its version is the crate's, its ctypes structures are the header's, it
finds the library beside itself (``TVM_RUNTIME_LIBRARY`` overriding, never the current
directory's checkout), and it keeps the runtime out of the global symbol scope until a model
library imports runtime functions by name."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tvmrt
from tvmrt import _lib

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(tvmrt.__file__).resolve().parent
CC = shutil.which("cc") or shutil.which("gcc")


def _python(code: str, cwd: Path, pythonpath: Path, library: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TVM_RUNTIME_LIBRARY", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(pythonpath)
    if library is not None:
        env["TVM_RUNTIME_LIBRARY"] = library
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True)


def test_version_is_the_crates():
    cargo = (REPO / "Cargo.toml").read_text()
    package = cargo.split("[package]", 1)[1]
    version = next(line.split('"')[1] for line in package.splitlines() if line.startswith("version"))
    assert tvmrt.__version__ == version


def test_installed_package_uses_its_own_library():
    """Under an installed wheel (CI tests one in a clean venv) the library is the package's copy."""
    if "TVM_RUNTIME_LIBRARY" in os.environ:
        pytest.skip("TVM_RUNTIME_LIBRARY chooses the library in this run")
    if not (PACKAGE / "libtvm_runtime.so").is_file():
        pytest.skip("running from a source checkout, not an installed package")
    assert Path(tvmrt.library_path) == PACKAGE / "libtvm_runtime.so"
    # An installed package may lie inside the checkout (docs/python.md's venv under target/),
    # but not be the checkout's source directory.
    assert PACKAGE != REPO / "python" / "tvmrt", f"tvmrt imported from the checkout's sources ({PACKAGE}), not the install"


def test_the_readme_states_the_package_and_wheel_sizes():
    """README.md's "a N MB package (a M MB wheel)" stays true of the installed package and of the
    wheel CI built (target/wheel), within a quarter."""
    if not (PACKAGE / "libtvm_runtime.so").is_file():
        pytest.skip("running from a source checkout, not an installed package")
    said = re.search(r"a ([\d.]+) MB\s+package \(a ([\d.]+) MB wheel\)", (REPO / "README.md").read_text())
    assert said, "README.md no longer states the package's size as `a N MB package (a M MB wheel)`"
    files = [f for f in PACKAGE.rglob("*") if f.is_file() and "__pycache__" not in f.parts]
    sizes = {"package": sum(f.stat().st_size for f in files) / 1e6}
    wheels = sorted((REPO / "target" / "wheel").glob("tvmrt-*.whl"))
    if wheels:
        sizes["wheel"] = wheels[-1].stat().st_size / 1e6
    for (what, size), stated in zip(sizes.items(), map(float, said.groups())):
        assert abs(size - stated) <= 0.25 * stated, f"README.md says a {stated} MB {what}, it is {size:.1f} MB"


@pytest.fixture
def package_copy(tmp_path):
    """The package's Python files copied under tmp_path/site, with the library beside them."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "tvmrt", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    (site / "tvmrt" / "libtvm_runtime.so").symlink_to(Path(tvmrt.library_path).resolve())
    return site


def test_library_beside_the_package_wins_and_the_variable_overrides(package_copy, tmp_path):
    code = "import tvmrt; print(tvmrt.library_path)"
    # A checkout-like directory as the current one: its target/release must not be searched.
    cwd = tmp_path / "work"
    (cwd / "target" / "release").mkdir(parents=True)
    (cwd / "target" / "release" / "libtvm_runtime.so").write_bytes(b"not a library")
    r = _python(code, cwd, package_copy)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()) == package_copy / "tvmrt" / "libtvm_runtime.so"
    other = tmp_path / "other.so"
    other.symlink_to(Path(tvmrt.library_path).resolve())
    r = _python(code, cwd, package_copy, library=str(other))
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()) == other


def test_no_library_names_where_it_looked(package_copy, tmp_path):
    (package_copy / "tvmrt" / "libtvm_runtime.so").unlink()
    (tmp_path / "target" / "release").mkdir(parents=True)
    shutil.copy(Path(tvmrt.library_path).resolve(), tmp_path / "target" / "release" / "libtvm_runtime.so")
    r = _python("import tvmrt", tmp_path, package_copy)
    assert r.returncode != 0
    assert "libtvm_runtime.so not found" in r.stderr, r.stderr
    assert str(package_copy / "tvmrt" / "libtvm_runtime.so") in r.stderr, r.stderr
    assert "pip install ./python" in r.stderr, r.stderr


# --------------------------------------------------------------------------------------------
# The ctypes structures against the generated header

STRUCTS = {
    "DLDevice": _lib.DLDevice,
    "DLDataType": _lib.DLDataType,
    "DLTensor": _lib.DLTensor,
    "DLManagedTensor": _lib.DLManagedTensor,
    "TVMTensorInfo": _lib.TVMTensorInfo,
    "TVMValue": _lib.TVMValue,
}


def _header_layout(tmp_path) -> dict:
    """``{(type, field or None): (offset or size)}`` as a C compiler lays out the header's types."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <tvm_runtime.h>", "int main(void) {"]
    for name, ty in STRUCTS.items():
        lines.append(f'  printf("{name} - %zu\\n", sizeof({name}));')
        for field, _ in ty._fields_:
            lines.append(f'  printf("{name} {field} %zu\\n", offsetof({name}, {field}));')
    lines += ["  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([CC, "-std=c11", f"-I{REPO / 'include'}", str(src), "-o", str(exe)], check=True)
    out = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines():
        name, field, value = line.split()
        out[(name, None if field == "-" else field)] = int(value)
    return out


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
@pytest.mark.skipif(not (REPO / "include" / "tvm_runtime.h").is_file(), reason="needs the repository's header")
def test_ctypes_structures_match_the_header(tmp_path):
    layout = _header_layout(tmp_path)
    for name, ty in STRUCTS.items():
        assert ctypes.sizeof(ty) == layout[(name, None)], f"sizeof({name})"
        for field, _ in ty._fields_:
            assert getattr(ty, field).offset == layout[(name, field)], f"offsetof({name}, {field})"


# --------------------------------------------------------------------------------------------
# The global symbol scope

# A library as TVM's C host code builds it: it calls runtime functions by name.
C_HOST_LIBRARY = r"""
#include <stdint.h>
typedef union { int64_t v_int64; double v_float64; void* v_handle; const char* v_str; } TVMValue;
void TVMAPISetLastError(const char* msg);
void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int code, int bits);
int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

int twice(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* resource) {
  if (n != 1 || codes[0] != 0) {
    TVMAPISetLastError("twice: expects one int");
    return -1;
  }
  int64_t* w = (int64_t*)TVMBackendAllocWorkspace(1, 0, 64, 0, 64);
  if (!w) return -1;
  w[0] = args[0].v_int64 * 2;
  ret->v_int64 = w[0];
  *ret_code = 0;
  return TVMBackendFreeWorkspace(1, 0, w);
}
"""

SCOPE_SCRIPT = r"""
import ctypes, sys
import tvmrt

def global_scope_has_runtime():
    try:
        ctypes.CDLL(None).TVMGetLastError
        return True
    except AttributeError:
        return False

print("after import", global_scope_has_runtime())
tvmrt.load_module(sys.argv[1])
print("after a library importing nothing", global_scope_has_runtime())
f = tvmrt.load_module(sys.argv[2])["twice"]
print("after a library importing runtime functions", global_scope_has_runtime())
print("twice(21)", f(21))
try:
    f("x")
except tvmrt.TVMError as e:
    print("error", str(e).splitlines()[0])
"""


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_runtime_goes_global_only_for_a_library_that_imports_it(tmp_path, demo_path):
    src = tmp_path / "c_host.c"
    src.write_text(C_HOST_LIBRARY)
    so = tmp_path / "c_host.so"
    subprocess.run([CC, "-shared", "-fPIC", str(src), "-o", str(so)], check=True)
    r = subprocess.run(
        [sys.executable, "-c", SCOPE_SCRIPT, demo_path, str(so)],
        cwd=tmp_path,
        env=dict(os.environ, TVM_RUNTIME_LIBRARY=str(Path(tvmrt.library_path).resolve()), PYTHONPATH=str(PACKAGE.parent)),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "after import False",
        "after a library importing nothing False",
        "after a library importing runtime functions True",
        "twice(21) 42",
        "error twice: expects one int",
    ], r.stdout
