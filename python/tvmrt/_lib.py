"""Loading ``libtvm_runtime.so`` and the C declarations the package uses (ctypes).

The library is opened with :class:`ctypes.CDLL`, which releases the GIL around every call, so
Python threads running models in parallel do not wait for one another.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    POINTER,
    Structure,
    Union,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import List, Optional

from .error import TVMError, from_message

__all__ = ["TVMError", "lib", "check", "library_path", "last_ffi_error"]

ENV_VAR = "TVM_RUNTIME_LIBRARY"
_LIB_NAMES = ["libtvm_runtime.so", "libtvm_runtime.dylib"]


def _candidates() -> List[Path]:
    """Where the library is looked for, in order: ``TVM_RUNTIME_LIBRARY`` alone when set; the
    package's own copy (an installed wheel); ``target/release`` of the checkout this package file
    lies in (running from a source checkout). Never the current directory or its parents."""
    env = os.environ.get(ENV_VAR)
    if env:
        # Absolute: given "./libtvm_runtime.so", ctypes would drop the "./" and let the loader
        # search its path instead of the current directory.
        return [Path(env).absolute()]
    here = Path(__file__).resolve().parent
    out = [here / n for n in _LIB_NAMES]
    checkout = here.parent.parent
    if (checkout / "Cargo.toml").is_file():
        out.extend(checkout / "target" / "release" / n for n in _LIB_NAMES)
    return out


def _find_library() -> Path:
    cands = _candidates()
    for c in cands:
        if c.is_file():
            return c
    env = os.environ.get(ENV_VAR)
    if env:
        if cands[0].is_dir():
            raise TVMError(
                f"{ENV_VAR}={env}: {cands[0]} is a directory; give the library file itself, e.g. "
                f"{cands[0] / _LIB_NAMES[0]}"
            )
        raise TVMError(f"{ENV_VAR}={env}: no such file: {cands[0]}")
    looked = ", ".join(str(c) for c in cands)
    raise TVMError(
        f"libtvm_runtime.so not found (looked for {looked}): install the package with "
        f"`pip install ./python`, which builds the library into it, or set {ENV_VAR} to the "
        "library's path"
    )


library_path: Path = _find_library()
# RTLD_LOCAL (ctypes' default): the runtime's symbols stay out of the global scope, so a process
# can also `import tvm` without either library's exports binding the other's models. A model
# library that imports runtime functions by name (TVM's C host code, tvm-ffi kernels) gets them
# because the runtime promotes itself to the global scope before opening such a library.
try:
    lib = ctypes.CDLL(str(library_path))
except OSError as e:  # pragma: no cover - depends on the machine
    raise TVMError(f"cannot load {library_path}: {e}") from e


# --------------------------------------------------------------------------------------------
# DLPack and TVM structs


class DLDevice(Structure):
    _fields_ = [("device_type", c_int), ("device_id", c_int)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(Structure):
    pass


DLManagedTensorDeleter = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", c_void_p),
    ("deleter", c_void_p),
]


class TVMTensorInfo(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("ndim", c_int32),
        ("shape", POINTER(c_int64)),
        ("dtype", DLDataType),
        ("nbytes", c_size_t),
        ("is_param", c_int32),
    ]


class TVMValue(Union):
    _fields_ = [("v_int64", c_int64), ("v_float64", c_double), ("v_handle", c_void_p), ("v_str", c_char_p)]


DLTensorPtr = POINTER(DLTensor)
PipelineCallback = ctypes.CFUNCTYPE(None, c_uint64, c_int, c_char_p, c_void_p)


def _decl(name: str, restype, argtypes) -> None:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = argtypes


_P = c_void_p
_decl("TVMGetLastError", c_char_p, [])
_decl("TVMArrayAlloc", c_int, [POINTER(c_int64), c_int, c_int, c_int, c_int, c_int, c_int, POINTER(DLTensorPtr)])
_decl("TVMArrayFree", c_int, [DLTensorPtr])
_decl("TVMArrayCopyFromBytes", c_int, [DLTensorPtr, c_void_p, c_size_t])
_decl("TVMArrayCopyToBytes", c_int, [DLTensorPtr, c_void_p, c_size_t])
_decl("TVMArrayCopyFromTo", c_int, [DLTensorPtr, DLTensorPtr, c_void_p])
_decl("TVMArrayFromDLPack", c_int, [c_void_p, POINTER(DLTensorPtr)])
_decl("TVMArrayToDLPack", c_int, [DLTensorPtr, POINTER(c_void_p)])
_decl("TVMDLManagedTensorCallDeleter", None, [c_void_p])
_decl("TVMModLoadFromFile", c_int, [c_char_p, c_char_p, POINTER(c_void_p)])
_decl("TVMModFree", c_int, [_P])
_decl("TVMModGetFunction", c_int, [_P, c_char_p, c_int, POINTER(c_void_p)])
_decl("TVMFuncFree", c_int, [_P])
_decl("TVMFuncCall", c_int, [_P, POINTER(TVMValue), POINTER(c_int), c_int, POINTER(TVMValue), POINTER(c_int)])
_decl("TVMObjectGetTypeIndex", c_int, [_P, POINTER(c_uint)])
_decl("TVMObjectTypeIndex2Key", c_int, [c_uint, POINTER(c_char_p)])

_decl("TVMRPCServerRun", c_int, [c_char_p])
_decl("TVMRPCServerLoop", c_int, [c_int])

_GE = c_void_p
# Tensor arguments of the executor calls are plain pointers: the hot path passes the address of a
# cached DLTensor as an int (byref() and POINTER(DLTensor) handles are accepted too).
_decl("TVMGraphExecutorCreateFromFactory", c_int, [_P, POINTER(DLDevice), c_uint32, POINTER(_GE)])
_decl("TVMGraphExecutorCreateFromFactoryWithOptions", c_int, [_P, POINTER(DLDevice), c_uint32, c_char_p, POINTER(_GE)])
_decl("TVMGraphExecutorCreateBucketed", c_int, [POINTER(c_void_p), c_uint32, POINTER(DLDevice), c_uint32, c_char_p, POINTER(_GE)])
_decl("TVMGraphExecutorCreateBucketedFromManifest", c_int, [c_char_p, POINTER(DLDevice), c_uint32, c_char_p, POINTER(_GE)])
_decl("TVMGraphExecutorGetNumBuckets", c_int, [_GE, POINTER(c_uint32)])
_decl("TVMGraphExecutorGetBucketInputShape", c_int, [_GE, c_uint32, c_int32, POINTER(POINTER(c_int64)), POINTER(c_int32)])
_decl("TVMGraphExecutorGetCurrentBucket", c_int, [_GE, POINTER(c_uint32)])
_decl("TVMBucketExtents", c_int, [c_int64, c_int64, c_char_p, POINTER(c_int64), c_uint32, POINTER(c_uint32)])
_decl("TVMGraphExecutorLoadParams", c_int, [_GE, c_void_p, c_size_t])
_decl("TVMGraphExecutorSetInput", c_int, [_GE, c_char_p, c_void_p])
_decl("TVMGraphExecutorSetInputByIndex", c_int, [_GE, c_int32, c_void_p])
_decl("TVMGraphExecutorSetInputZeroCopy", c_int, [_GE, c_int32, c_void_p])
_decl("TVMGraphExecutorSetOutputZeroCopy", c_int, [_GE, c_int32, c_void_p])
_decl("TVMGraphExecutorRun", c_int, [_GE])
_decl("TVMGraphExecutorGetOutput", c_int, [_GE, c_int32, c_void_p])
_decl("TVMGraphExecutorGetNumInputs", c_int, [_GE, POINTER(c_int32)])
_decl("TVMGraphExecutorGetNumOutputs", c_int, [_GE, POINTER(c_int32)])
_decl("TVMGraphExecutorGetInputIndex", c_int, [_GE, c_char_p, POINTER(c_int32)])
_decl("TVMGraphExecutorGetOutputIndex", c_int, [_GE, c_char_p, POINTER(c_int32)])
_decl("TVMGraphExecutorGetInputInfo", c_int, [_GE, c_int32, POINTER(TVMTensorInfo)])
_decl("TVMGraphExecutorGetOutputInfo", c_int, [_GE, c_int32, POINTER(TVMTensorInfo)])
_decl("TVMGraphExecutorProfile", c_int, [_GE, c_int, POINTER(c_char_p)])
_decl("TVMGraphExecutorFree", c_int, [_GE])

_PL = c_void_p
_decl("TVMPipelineCreate", c_int, [_P, POINTER(DLDevice), c_uint32, c_char_p, POINTER(_PL)])
_decl(
    "TVMPipelineSubmitWithCallback",
    c_int,
    [_PL, DLTensorPtr, c_uint32, DLTensorPtr, c_uint32, PipelineCallback, c_void_p, POINTER(c_uint64)],
)
_decl("TVMPipelineSubmit", c_int, [_PL, DLTensorPtr, c_uint32, DLTensorPtr, c_uint32, POINTER(c_uint64)])
_decl("TVMPipelineWait", c_int, [_PL, c_uint64])
_decl("TVMPipelineGetTrace", c_int, [_PL, POINTER(c_char_p)])
_decl("TVMPipelineGetTraceInto", c_int, [_PL, c_char_p, c_size_t, POINTER(c_size_t)])
_decl("TVMPipelineFree", c_int, [_PL])


def last_error() -> str:
    msg = lib.TVMGetLastError()
    return msg.decode("utf-8", "replace") if msg else "unknown error"


def last_ffi_error() -> BaseException:
    """The runtime's last error as the exception its kind names (see :mod:`tvmrt.error`)."""
    return from_message(last_error())


def check(rc: int) -> None:
    """Raise the runtime's last error (a :class:`TVMError`) when ``rc`` is not 0."""
    if rc != 0:
        raise last_ffi_error()


def _capsule_api():
    api = ctypes.pythonapi
    fns = {}
    for name, restype, argtypes in [
        ("PyCapsule_New", ctypes.py_object, [c_void_p, c_char_p, c_void_p]),
        ("PyCapsule_GetPointer", c_void_p, [ctypes.py_object, c_char_p]),
        ("PyCapsule_IsValid", c_int, [ctypes.py_object, c_char_p]),
        ("PyCapsule_SetName", c_int, [ctypes.py_object, c_char_p]),
    ]:
        f = getattr(api, name)
        f.restype = restype
        f.argtypes = argtypes
        fns[name] = f
    # The destructor sees a capsule being deallocated: raw pointers only, no new references.
    for name, restype in [("PyCapsule_IsValid", c_int), ("PyCapsule_GetPointer", c_void_p)]:
        f = ctypes.PYFUNCTYPE(restype, c_void_p, c_char_p)((name, api))
        fns[name + "_raw"] = f
    return fns


capsule = _capsule_api()
