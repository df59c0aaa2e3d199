"""A kernel library of apache-tvm 0.27 (tvm-ffi kernels) loaded through a runtime that was itself
opened RTLD_LOCAL (ctypes' default, and most dlopen users'): the kernels import
``TVMFFIErrorSetRaisedFromCStrParts`` from the global scope, which the runtime arranges; a kernel's
own error then comes back as the call's error instead of ending the process. Run in a fresh
interpreter over the C API alone, so nothing but the runtime decides what is global."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tvmrt

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)
lib.TVMGetLastError.restype = ctypes.c_char_p

class V(ctypes.Union):
    _fields_ = [("v_int64", ctypes.c_int64), ("v_handle", ctypes.c_void_p)]

def check(rc):
    if rc != 0:
        raise RuntimeError(lib.TVMGetLastError().decode())

def call(f, values, codes):
    args = (V * len(values))()
    for i, v in enumerate(values):
        if codes[i] == 0:
            args[i].v_int64 = v
        else:
            args[i].v_handle = v
    ret, code = V(), ctypes.c_int()
    rc = lib.TVMFuncCall(f, args, (ctypes.c_int * len(codes))(*codes), len(codes), ctypes.byref(ret), ctypes.byref(code))
    return rc, ret

def array(shape):
    h = ctypes.c_void_p()
    check(lib.TVMArrayAlloc((ctypes.c_int64 * len(shape))(*shape), len(shape), 2, 32, 1, 1, 0, ctypes.byref(h)))
    return h.value

path, name, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
mod = ctypes.c_void_p()
check(lib.TVMModLoadFromFile(path.encode(), b"so", ctypes.byref(mod)))
kernels = mod
if path.endswith("lib.so"):  # a Relax library: the kernels are in the root's import
    get_import = ctypes.c_void_p()
    check(lib.TVMFuncGetGlobal(b"runtime.ModuleGetImport", ctypes.byref(get_import)))
    rc, ret = call(get_import, [mod.value, 0], [9, 0])
    check(rc)
    kernels = ctypes.c_void_p(ret.v_handle)
kernel = ctypes.c_void_p()
check(lib.TVMModGetFunction(kernels, name.encode(), 0, ctypes.byref(kernel)))
small, a, b = array([2, n]), array([n, n]), array([n, n])
rc, _ = call(kernel, [small, a, b], [7, 7, 7])
print("rc", rc)
print("error", lib.TVMGetLastError().decode().splitlines()[0])
rc, _ = call(kernel, [a, a, b], [7, 7, 7])
print("rc", rc)
'''

# (library, kernel, n, first argument's name): the kernel takes three f32[n, n] tensors.
CASES = [
    ("relax-0.27/one_kernel/lib.so", "add", 4, "x"),
    # Plain TIR: no library bin, so the runtime's symbols are made global when the kernel is looked up.
    ("tir-0.27/parallel_matmul.so", "matmul", 64, "A"),
]


@pytest.mark.parametrize("lib, kernel, n, arg", CASES, ids=[c[1] for c in CASES])
def test_kernel_errors_reach_the_caller_when_the_runtime_is_loaded_locally(lib, kernel, n, arg):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tvmrt.library_path), str(REPO / "tests/data" / lib), kernel, str(n)],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "rc -1"
    assert lines[1].startswith(f"error ValueError: Invalid {arg}.shape[0] on argument #0"), lines[1]
    assert lines[2] == "rc 0"
