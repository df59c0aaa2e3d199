"""Devices, data types and :class:`NDArray`, with DLPack both ways."""

from __future__ import annotations

import ctypes
import warnings
from ctypes import addressof, byref, c_char, c_int64, c_void_p
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from . import error
from ._lib import DLDataType, DLDevice, DLManagedTensor, DLTensor, DLTensorPtr, TVMError, capsule, check, last_ffi_error, lib
from .error import from_message

__all__ = [
    "ALIGNMENT",
    "Device",
    "NDArray",
    "array",
    "cpu",
    "device",
    "empty",
    "empty_aligned",
    "from_dlpack",
    "is_aligned",
]

#: Data alignment the runtime needs for zero-copy (bytes).
ALIGNMENT = 64

_DEVICE_NAMES = {1: "cpu", 2: "cuda", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm"}
_DEVICE_CODES = {v: k for k, v in _DEVICE_NAMES.items()}
_DEVICE_CODES["llvm"] = 1
_DEVICE_CODES["c"] = 1


class Device:
    """A device, as TVM's ``tvm.runtime.Device``: ``cpu(0)``, ``device("cpu", 0)``."""

    __slots__ = ("device_type", "device_id", "_c")

    def __init__(self, device_type: int, device_id: int = 0) -> None:
        self.device_type = int(device_type)
        self.device_id = int(device_id)
        self._c = DLDevice(self.device_type, self.device_id)

    def __repr__(self) -> str:
        name = _DEVICE_NAMES.get(self.device_type, f"device_type_{self.device_type}")
        return f"{name}({self.device_id})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and (self.device_type, self.device_id) == (
            other.device_type,
            other.device_id,
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))


def cpu(dev_id: int = 0) -> Device:
    """The CPU device ``dev_id`` (TVM's ``tvm.cpu``)."""
    return Device(1, dev_id)


def device(dev_type: Union[str, int], dev_id: int = 0) -> Device:
    """A device by name (``"cpu"``, ``"cuda"``, ...) or DLPack device type code."""
    if isinstance(dev_type, str):
        code = _DEVICE_CODES.get(dev_type.split()[0].lower())
        if code is None:
            raise error.ValueError(f"unknown device {dev_type!r}; known: {sorted(_DEVICE_CODES)}")
        return Device(code, dev_id)
    return Device(int(dev_type), dev_id)


# --------------------------------------------------------------------------------------------
# dtypes

_NP_TO_DL: Dict[np.dtype, Tuple[int, int]] = {}
for _name, _code, _bits in [
    ("int8", 0, 8),
    ("int16", 0, 16),
    ("int32", 0, 32),
    ("int64", 0, 64),
    ("uint8", 1, 8),
    ("uint16", 1, 16),
    ("uint32", 1, 32),
    ("uint64", 1, 64),
    ("float16", 2, 16),
    ("float32", 2, 32),
    ("float64", 2, 64),
    ("bool", 6, 8),
]:
    _NP_TO_DL[np.dtype(_name)] = (_code, _bits)
_DL_TO_NP = {v: k for k, v in _NP_TO_DL.items()}
_DL_TO_NP[(1, 1)] = np.dtype("bool")  # TVM's "bool" is uint1 in a byte


def dtype_to_str(code: int, bits: int, lanes: int = 1) -> str:
    """TVM's spelling of a DLPack dtype: ``float32``, ``int8``, ``uint8``, ``bool``."""
    if (code, bits) in ((6, 8), (1, 1)):
        base = "bool"
    else:
        base = {0: "int", 1: "uint", 2: "float", 4: "bfloat"}.get(code, f"custom[{code}]") + str(bits)
    return base if lanes == 1 else f"{base}x{lanes}"


def _np_dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise error.ValueError(f"unknown dtype {dtype!r}") from e
    if dt not in _NP_TO_DL:
        raise error.ValueError(f"dtype {dt} is not supported (supported: {sorted(str(d) for d in _NP_TO_DL)})")
    return dt


def _dl_dtype(dt: np.dtype) -> DLDataType:
    code, bits = _NP_TO_DL[dt]
    return DLDataType(code, bits, 1)


def np_dtype_of(code: int, bits: int, lanes: int) -> np.dtype:
    dt = _DL_TO_NP.get((code, bits))
    if dt is None or lanes != 1:
        raise error.ValueError(f"dtype {dtype_to_str(code, bits, lanes)} has no numpy equivalent")
    return dt


# --------------------------------------------------------------------------------------------
# Alignment helpers


def is_aligned(arr: np.ndarray, alignment: int = ALIGNMENT) -> bool:
    """Whether ``arr``'s data starts on an ``alignment``-byte boundary."""
    return arr.__array_interface__["data"][0] % alignment == 0


def empty_aligned(shape: Union[int, Sequence[int]], dtype: Any = "float32", alignment: int = ALIGNMENT) -> np.ndarray:
    """An uninitialised C-contiguous numpy array whose data is ``alignment``-byte aligned, as the
    runtime needs for zero-copy inputs and outputs and for :func:`from_dlpack`."""
    dt = np.dtype(dtype)
    shape_t = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    n = int(np.prod(shape_t, dtype=np.int64)) * dt.itemsize
    raw = np.empty(n + alignment, dtype=np.uint8)
    off = (-raw.__array_interface__["data"][0]) % alignment
    return raw[off : off + n].view(dt).reshape(shape_t)


def _aligned_copy(arr: np.ndarray) -> np.ndarray:
    out = empty_aligned(arr.shape, arr.dtype)
    np.copyto(out, arr)
    return out


# --------------------------------------------------------------------------------------------
# DLTensor views of numpy arrays (borrowed for the duration of a call)


class _TensorView:
    """A ``DLTensor`` describing a numpy array's memory; keeps the array and shape alive."""

    __slots__ = ("tensor", "array", "_shape")

    def __init__(self, arr: np.ndarray, dev: Optional[DLDevice] = None) -> None:
        dt = arr.dtype
        if dt not in _NP_TO_DL:
            raise error.ValueError(f"dtype {dt} is not supported (supported: {sorted(str(d) for d in _NP_TO_DL)})")
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        self.array = arr
        ndim = arr.ndim
        self._shape = (c_int64 * max(ndim, 1))(*arr.shape)
        code, bits = _NP_TO_DL[dt]
        self.tensor = DLTensor(
            arr.__array_interface__["data"][0],
            dev if dev is not None else DLDevice(1, 0),
            ndim,
            DLDataType(code, bits, 1),
            self._shape,
            None,
            0,
        )


def as_numpy(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, NDArray):
        return value.numpy()
    return np.asarray(value)


# --------------------------------------------------------------------------------------------
# NDArray

_DLTENSOR = b"dltensor"
_USED_DLTENSOR = b"used_dltensor"


@ctypes.CFUNCTYPE(None, c_void_p)
def _capsule_destructor(cap: int) -> None:
    # A capsule nobody consumed still owns its DLManagedTensor: run the deleter.
    if capsule["PyCapsule_IsValid_raw"](cap, _DLTENSOR):
        ptr = capsule["PyCapsule_GetPointer_raw"](cap, _DLTENSOR)
        if ptr:
            lib.TVMDLManagedTensorCallDeleter(ptr)


class NDArray:
    """An n-dimensional array of the runtime (64-byte aligned data), as TVM's
    ``tvm.nd.NDArray``. ``numpy()`` copies out; ``np.from_dlpack(arr)`` shares the memory."""

    __slots__ = ("_handle", "_addr", "_shape", "_npdt", "__weakref__")

    def __init__(self, handle: Any, shape: Optional[Tuple[int, ...]] = None, npdt: Optional[np.dtype] = None,
                 addr: Optional[int] = None) -> None:
        # `handle`: an owned TVMArrayHandle (POINTER(DLTensor)); `addr`: its address, when the
        # caller has it. An array's shape and dtype never change, so they are read once.
        self._handle = handle
        self._addr = addr
        self._shape = shape
        self._npdt = npdt

    # -- lifetime --
    def _h(self) -> Any:
        h = self._handle
        if h is None:
            raise TVMError("NDArray has been freed")
        return h

    def _address(self) -> int:
        """The handle's address, as a packed argument carries it (worked out once)."""
        if self._handle is None:
            raise TVMError("NDArray has been freed")
        if self._addr is None:
            self._addr = ctypes.cast(self._handle, c_void_p).value
        return self._addr

    def free(self) -> None:
        """Release the array now (a second call does nothing); later use raises TVMError."""
        h, self._handle, self._addr = self._handle, None, None
        if h is not None and lib is not None:
            lib.TVMArrayFree(h)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    # -- properties --
    @property
    def handle(self) -> Any:
        """The ``TVMArrayHandle`` (``DLTensor*``) for C calls."""
        return self._h()

    @property
    def shape(self) -> Tuple[int, ...]:
        h = self._h()
        if self._shape is None:
            t = h.contents
            self._shape = tuple(t.shape[: t.ndim])
        return self._shape

    @property
    def dtype(self) -> str:
        d = self._h().contents.dtype
        return dtype_to_str(d.code, d.bits, d.lanes)

    @property
    def device(self) -> Device:
        d = self._h().contents.device
        return Device(d.device_type, d.device_id)

    @property
    def ndim(self) -> int:
        return self._h().contents.ndim

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        d = self._h().contents.dtype
        return self.size * ((d.bits * d.lanes + 7) // 8)

    @property
    def data_ptr(self) -> int:
        t = self._h().contents
        return (t.data or 0) + t.byte_offset

    def __repr__(self) -> str:
        if self._handle is None:
            return "<tvmrt.NDArray (freed)>"
        return f"<tvmrt.NDArray shape={self.shape} dtype={self.dtype} device={self.device}>"

    def _np_dtype(self) -> np.dtype:
        if self._npdt is None:
            d = self._h().contents.dtype
            self._npdt = np_dtype_of(d.code, d.bits, d.lanes)
        return self._npdt

    # -- copies --
    def numpy(self) -> np.ndarray:
        """A numpy copy of the array."""
        out = np.empty(self.shape, dtype=self._np_dtype())
        if out.nbytes:
            if lib.TVMArrayCopyToBytes(self._handle, addressof(c_char.from_buffer(out)), out.nbytes):
                raise last_ffi_error()
        return out

    asnumpy = numpy

    def copyfrom(self, source: Any) -> "NDArray":
        """Copy ``source`` (numpy array, NDArray, array-like) into this array; shape and dtype
        must match."""
        if isinstance(source, NDArray):
            check(lib.TVMArrayCopyFromTo(source._h(), self._h(), None))
            return self
        arr = np.asarray(source)
        want_dt = self._np_dtype()
        if arr.dtype != want_dt:
            raise error.ValueError(f"copyfrom: dtype {arr.dtype} does not match the array's {want_dt}")
        if tuple(arr.shape) != self.shape:
            raise error.ValueError(f"copyfrom: shape {tuple(arr.shape)} does not match the array's {self.shape}")
        arr = np.ascontiguousarray(arr)
        check(lib.TVMArrayCopyFromBytes(self._h(), arr.ctypes.data, arr.nbytes))
        return self

    def copyto(self, target: Any) -> Any:
        """Copy into ``target`` (an NDArray or a writable numpy array), or to a new array on
        the device ``target``."""
        if isinstance(target, Device):
            out = empty(self.shape, self.dtype, target)
            check(lib.TVMArrayCopyFromTo(self._h(), out._h(), None))
            return out
        if isinstance(target, NDArray):
            check(lib.TVMArrayCopyFromTo(self._h(), target._h(), None))
            return target
        if isinstance(target, np.ndarray):
            if target.dtype != self._np_dtype() or tuple(target.shape) != self.shape:
                raise error.ValueError(
                    f"copyto: target {target.shape} {target.dtype} does not match {self.shape} {self.dtype}"
                )
            if not target.flags.c_contiguous or not target.flags.writeable:
                raise error.ValueError("copyto: the target numpy array must be C-contiguous and writable")
            check(lib.TVMArrayCopyToBytes(self._h(), target.ctypes.data, target.nbytes))
            return target
        raise error.TypeError(f"copyto: cannot copy into {type(target).__name__}")

    # -- DLPack --
    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None) -> Any:
        """Export as a DLPack capsule sharing this array's memory (it stays alive as long as the
        consumer needs it)."""
        if copy:
            raise BufferError("tvmrt.NDArray.__dlpack__: copy=True is not supported")
        out = c_void_p()
        check(lib.TVMArrayToDLPack(self._h(), byref(out)))
        return capsule["PyCapsule_New"](out.value, _DLTENSOR, ctypes.cast(_capsule_destructor, c_void_p))

    def __dlpack_device__(self) -> Tuple[int, int]:
        d = self._h().contents.device
        return (d.device_type, d.device_id)

    to_dlpack = __dlpack__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)


_DTYPE_CACHE: Dict[Any, np.dtype] = {}


def empty(shape: Union[int, Sequence[int]], dtype: Any = "float32", dev: Optional[Device] = None) -> NDArray:
    """A new uninitialised array (TVM's ``tvm.nd.empty``)."""
    dt = _DTYPE_CACHE.get(dtype) if isinstance(dtype, str) else None
    if dt is None:
        dt = _np_dtype(dtype)
        if isinstance(dtype, str):
            _DTYPE_CACHE[dtype] = dt
    shape_t = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape_t):
        raise error.ValueError(f"empty: negative extent in shape {shape_t}")
    dtype_code, bits = _NP_TO_DL[dt]
    c_shape = (c_int64 * max(len(shape_t), 1))(*shape_t)
    h = DLTensorPtr()
    dev_type, dev_id = (1, 0) if dev is None else (dev.device_type, dev.device_id)
    if lib.TVMArrayAlloc(c_shape, len(shape_t), dtype_code, bits, 1, dev_type, dev_id, byref(h)):
        raise last_ffi_error()
    return NDArray(h, shape_t, dt)


def array(arr: Any, device: Optional[Device] = None, dtype: Any = None) -> NDArray:
    """A new runtime array holding a copy of ``arr`` (numpy array or array-like), as TVM's
    ``tvm.nd.array``. For no copy, use :func:`from_dlpack`."""
    if isinstance(arr, NDArray):
        return arr.copyto(device or arr.device)
    a = np.asarray(arr, dtype=dtype)
    out = empty(a.shape, a.dtype, device)
    return out.copyfrom(a)


def from_dlpack(obj: Any, copy_if_misaligned: bool = True) -> NDArray:
    """An NDArray sharing the memory of ``obj`` (anything with ``__dlpack__``, e.g. a numpy
    array or a torch tensor, or a DLPack capsule). The runtime needs 64-byte aligned, compact
    data: other arrays are copied with a :class:`UserWarning` (``copy_if_misaligned=False``
    raises instead). Allocate with :func:`empty_aligned` to avoid the copy."""
    if isinstance(obj, NDArray):
        return obj
    cap = obj.__dlpack__() if hasattr(obj, "__dlpack__") else obj
    try:
        ptr = capsule["PyCapsule_GetPointer"](cap, _DLTENSOR)
    except Exception as e:
        raise error.TypeError(f"from_dlpack: {type(obj).__name__} is not a DLPack producer or an unused 'dltensor' capsule") from e
    h = DLTensorPtr()
    if lib.TVMArrayFromDLPack(ptr, byref(h)) == 0:
        capsule["PyCapsule_SetName"](cap, _USED_DLTENSOR)
        return NDArray(h)
    msg = lib.TVMGetLastError().decode("utf-8", "replace")
    # Not taken over: the capsule still owns the tensor and frees it when collected.
    if ("aligned" in msg or "contiguous" in msg or "compact" in msg) and copy_if_misaligned and hasattr(obj, "__dlpack__"):
        warnings.warn(
            f"from_dlpack: copying ({msg}); allocate with tvmrt.empty_aligned() for zero-copy",
            UserWarning,
            stacklevel=2,
        )
        try:
            src = np.from_dlpack(obj)
        except Exception:
            src = np.asarray(obj)
        return array(src)
    raise from_message(msg)
