"""Packed functions, objects and modules over the C API (``TVMFuncCall``), as TVM's
``tvm.runtime.PackedFunc`` and ``tvm.runtime.Module``: module functions (``lib["name"]``),
globals (:func:`get_global_func`), the values they take and return, and :func:`load_module`.

Arguments: :class:`NDArray` (numpy arrays are copied into one), ``int``, ``float``, ``bool``,
``str``, ``None``, :class:`Device`, :class:`Module`, :class:`Function`, :class:`Object`.
Results: the same kinds; a runtime ``Array`` object (a tuple result) comes back as a Python list
of its converted items.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, byref, c_char_p, c_int, c_uint, c_void_p
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import error
from ._lib import DLTensorPtr, TVMError, TVMValue, check, last_ffi_error, lib
from .ndarray import Device, NDArray, array

__all__ = ["Function", "Module", "Object", "get_global_func", "load_module", "pack_args", "unpack"]

# TVM's argument type codes (TVMArgTypeCode)
INT, FLOAT, NULLPTR, DEVICE = 0, 2, 4, 6
OBJECT, MODULE, FUNC, STR, BYTES, NDARRAY, BOOL = 8, 9, 10, 11, 12, 13, 15

_call = lib.TVMFuncCall


class Object:
    """A runtime object handle this side owns one reference to (``TVMObjectFree`` on free)."""

    def __init__(self, handle: c_void_p) -> None:
        self._handle: Optional[c_void_p] = handle

    def _h(self) -> c_void_p:
        if self._handle is None:
            raise TVMError("Object has been freed")
        return self._handle

    @property
    def handle(self) -> c_void_p:
        return self._h()

    @property
    def type_key(self) -> str:
        index = c_uint()
        check(lib.TVMObjectGetTypeIndex(self._h(), byref(index)))
        key = c_char_p()
        check(lib.TVMObjectTypeIndex2Key(index.value, byref(key)))
        return (key.value or b"").decode()

    def free(self) -> None:
        h, self._handle = self._handle, None
        if h is not None and lib is not None:
            lib.TVMObjectFree(h)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"<tvmrt.Object {self.type_key if self._handle is not None else '(freed)'}>"


class Function:
    """A packed function (``TVMFunctionHandle``): call it with Python values."""

    def __init__(self, handle: c_void_p, name: str = "") -> None:
        self._handle: Optional[c_void_p] = handle
        self.name = name

    def _h(self) -> c_void_p:
        if self._handle is None:
            raise TVMError(f"function {self.name!r} has been freed")
        return self._handle

    @property
    def handle(self) -> c_void_p:
        return self._h()

    def free(self) -> None:
        h, self._handle = self._handle, None
        if h is not None and lib is not None:
            lib.TVMFuncFree(h)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __call__(self, *args: Any) -> Any:
        values, codes, keep = pack_args(args)
        return call_packed(self._h(), values, codes, len(args), keep)

    def __repr__(self) -> str:
        return f"<tvmrt.Function {self.name}{' (freed)' if self._handle is None else ''}>"


def call_packed(handle: c_void_p, values: Any, codes: Any, n: int, keep: Any = None) -> Any:
    """One ``TVMFuncCall`` on packed arguments; the converted result. ``keep`` holds what the
    arguments point into until the call returns."""
    ret = TVMValue()
    ret_code = c_int()
    if _call(handle, values, codes, n, byref(ret), byref(ret_code)):
        raise last_ffi_error()
    del keep
    return unpack(ret, ret_code.value)


def pack_args(args: Sequence[Any]) -> Tuple[Any, Any, List[Any]]:
    """``TVMValue`` and type-code arrays for ``args``, and what must stay alive meanwhile."""
    n = len(args)
    values = (TVMValue * max(n, 1))()
    codes = (c_int * max(n, 1))()
    keep: List[Any] = []
    for i, a in enumerate(args):
        codes[i] = _pack_one(a, values[i], keep)
    return values, codes, keep


def _pack_one(a: Any, slot: TVMValue, keep: List[Any]) -> int:
    if isinstance(a, NDArray):
        slot.v_handle = a._address()
        return NDARRAY
    if isinstance(a, np.ndarray) or hasattr(a, "__dlpack__"):
        arr = array(np.asarray(a) if not isinstance(a, np.ndarray) else a)
        keep.append(arr)
        return _pack_one(arr, slot, keep)
    if a is None:
        slot.v_handle = None
        return NULLPTR
    if isinstance(a, (bool, np.bool_)):
        slot.v_int64 = int(a)
        return BOOL
    if isinstance(a, (int, np.integer)):
        slot.v_int64 = int(a)
        return INT
    if isinstance(a, (float, np.floating)):
        slot.v_float64 = float(a)
        return FLOAT
    if isinstance(a, str):
        b = a.encode()
        keep.append(b)
        slot.v_str = b
        return STR
    if isinstance(a, Device):
        # TVMValue's v_device: device_type then device_id, two int32s in the first 8 bytes
        slot.v_int64 = (a.device_id << 32) | (a.device_type & 0xFFFFFFFF)
        return DEVICE
    for cls, code in ((Function, FUNC), (Object, OBJECT)):
        if isinstance(a, cls):
            slot.v_handle = a._h().value
            return code
    if isinstance(a, Module):
        slot.v_handle = a._h().value
        return MODULE
    if isinstance(a, (list, tuple)):
        # As TVM's Python passes them: a runtime Array of the items (a model's parameters).
        arr = _array_object(a)
        keep.append(arr)
        slot.v_handle = arr._h().value
        return OBJECT
    raise error.TypeError(f"cannot pass a {type(a).__name__} to a packed function")


def _array_object(items: Sequence[Any]) -> Object:
    """A runtime Array of ``items``, kept as the object (not read back into a list)."""
    values, codes, keep = pack_args(items)
    ret = TVMValue()
    ret_code = c_int()
    if _call(_global("runtime.Array")._h(), values, codes, len(items), byref(ret), byref(ret_code)):
        raise last_ffi_error()
    del keep
    if ret_code.value != OBJECT:
        raise error.TypeError(f"runtime.Array returned type code {ret_code.value}")
    return Object(c_void_p(ret.v_handle))


def unpack(v: TVMValue, code: int) -> Any:
    """A returned value as a Python value; object handles become owners of their reference."""
    if code in (INT, 1):
        return v.v_int64
    if code == BOOL:
        return bool(v.v_int64)
    if code == FLOAT:
        return v.v_float64
    if code == NULLPTR:
        return None
    if code == STR:
        return (v.v_str or b"").decode("utf-8", "replace")
    if code == NDARRAY:
        return NDArray(ctypes.cast(c_void_p(v.v_handle), DLTensorPtr), addr=v.v_handle)
    if code == MODULE:
        return Module(c_void_p(v.v_handle))
    if code == FUNC:
        return Function(c_void_p(v.v_handle))
    if code == OBJECT:
        return _object(Object(c_void_p(v.v_handle)))
    raise error.TypeError(f"a packed function returned type code {code}, which tvmrt does not read")


def _object(obj: Object) -> Any:
    """A runtime Array as a list of its items (converted); other objects as they are."""
    key = obj.type_key
    if key not in ("runtime.Array", "ffi.Array", "Array"):
        return obj
    size = _global("runtime.ArraySize")(obj)
    get_item = _global("runtime.ArrayGetItem")
    return [get_item(obj, i) for i in range(size)]


_GLOBALS: dict = {}


def _global(name: str) -> Function:
    f = _GLOBALS.get(name)
    if f is None:
        f = _GLOBALS[name] = get_global_func(name)
    return f


def get_global_func(name: str, allow_missing: bool = False) -> Optional[Function]:
    """The global function ``name`` (TVM's ``tvm.get_global_func``)."""
    h = c_void_p()
    check(lib.TVMFuncGetGlobal(name.encode(), byref(h)))
    if not h.value:
        if allow_missing:
            return None
        raise error.AttributeError(f"no global function named {name!r}")
    return Function(h, name)


_decl_done = False


def _declare() -> None:
    global _decl_done
    if _decl_done:
        return
    for name, restype, argtypes in [
        ("TVMFuncGetGlobal", c_int, [c_char_p, POINTER(c_void_p)]),
        ("TVMObjectFree", c_int, [c_void_p]),
    ]:
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes
    _decl_done = True


_declare()


# --------------------------------------------------------------------------------------------
# Modules: a value may be a module, and a module hands out functions, so they share this file.

#: Type keys of Relax VM executables: TVM 0.18's and the tvm-ffi releases'.
VM_EXECUTABLE_KEYS = ("relax.Executable", "relax.VMExecutable")
VM_EXECUTABLE_HINT = (
    "{what} is a Relax VM executable, not a graph executor factory: run it with "
    "tvmrt.relax.VirtualMachine(lib, tvmrt.cpu())"
)

#: What ``module["default"]`` gives: installed by the graph executor layer (a factory's
#: ``default`` creates a graph executor); until then ``default`` is an ordinary function name.
_default_function: Optional[Callable[["Module"], Any]] = None


def install_default_function(make: Callable[["Module"], Any]) -> None:
    """Install what ``module["default"]`` returns (the layer above calls this once)."""
    global _default_function
    _default_function = make


class Module:
    """A loaded module (TVM's ``tvm.runtime.Module``), e.g. an ``export_library`` ``.so``.
    ``module["default"](dev)`` creates a graph executor from a factory module; ``module[name]``
    is any other function of the module (a :class:`tvmrt.packed.Function`). A Relax VM
    executable runs through :class:`tvmrt.relax.VirtualMachine`."""

    def __init__(self, handle: c_void_p, path: str = "") -> None:
        self._handle: Optional[c_void_p] = handle
        self.path = path

    def _h(self) -> c_void_p:
        if self._handle is None:
            raise TVMError("Module has been freed")
        return self._handle

    @property
    def handle(self) -> c_void_p:
        return self._h()

    def free(self) -> None:
        """Release the module now. Executors created from it keep what they need."""
        h, self._handle = self._handle, None
        if h is not None and lib is not None:
            lib.TVMModFree(h)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # pragma: no cover
            pass

    def __enter__(self) -> "Module":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.free()

    def __repr__(self) -> str:
        return f"<tvmrt.Module {self.path or ''}{' (freed)' if self._handle is None else ''}>"

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        """Whether the module (or, with ``query_imports``, its imports) has function ``name``."""
        f = c_void_p()
        check(lib.TVMModGetFunction(self._h(), name.encode(), int(query_imports), byref(f)))
        if f.value:
            lib.TVMFuncFree(f)
            return True
        return False

    @property
    def type_key(self) -> str:
        """The module's kind: ``GraphExecutorFactory``, ``library``, ``relax.Executable`` ..."""
        return get_global_func("runtime.ModuleGetTypeKey")(self)

    def is_vm_executable(self) -> bool:
        """Whether this is a Relax VM executable (``relax.build`` / ``tvm.compile`` output)."""
        return self.type_key in VM_EXECUTABLE_KEYS

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str):
            raise error.TypeError(f"function names are strings, got {type(name).__name__}")
        if name == "default" and self.is_vm_executable():
            raise error.AttributeError(VM_EXECUTABLE_HINT.format(what=f"{self.path or 'the module'}"))
        if name == "default" and _default_function is not None:
            return _default_function(self)
        f = c_void_p()
        check(lib.TVMModGetFunction(self._h(), name.encode(), 0, byref(f)))
        if not f.value:
            key = self.type_key
            hint = " (a graph executor: module['default'](dev))" if key == "GraphExecutorFactory" else ""
            where = f"module {self.path}" if self.path else "module"
            raise error.AttributeError(f"{where} ({key}) has no function {name!r}{hint}")
        return Function(f, name)

    get_function = __getitem__


def load_module(path: Union[str, "os.PathLike[str]"], fmt: str = "") -> Module:
    """Load a module from a file (``export_library``'s ``.so``), as TVM's
    ``tvm.runtime.load_module``."""
    p = os.fspath(path)
    # dlopen looks a bare name up in the library path; a file in the current directory is meant.
    if os.sep not in p and os.path.exists(p):
        p = os.path.join(".", p)
    h = c_void_p()
    check(lib.TVMModLoadFromFile(p.encode(), fmt.encode(), byref(h)))
    return Module(h, os.fspath(path))
