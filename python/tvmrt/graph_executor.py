"""Graph executors: ``GraphModule`` (TVM's
``tvm.contrib.graph_executor.GraphModule``) and bucketed executors for dynamic shapes."""

from __future__ import annotations

import os
import statistics
import time
import warnings
from ctypes import POINTER, addressof, byref, c_char, c_char_p, c_int32, c_int64, c_uint32, c_void_p
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import error, packed
from ._lib import DLDevice, TVMError, TVMTensorInfo, check, last_ffi_error, lib

_run = lib.TVMGraphExecutorRun
_set_input_by_index = lib.TVMGraphExecutorSetInputByIndex
_get_output = lib.TVMGraphExecutorGetOutput
from .packed import VM_EXECUTABLE_HINT, VM_EXECUTABLE_KEYS, Module, load_module
from .ndarray import (
    Device,
    NDArray,
    _TensorView,
    _aligned_copy,
    cpu,
    dtype_to_str,
    empty,
    is_aligned,
    np_dtype_of,
)

__all__ = [
    "BenchmarkResult",
    "BucketedGraphModule",
    "GraphModule",
    "Module",
    "TensorInfo",
    "bucket_extents",
    "create",
    "create_bucketed",
    "load_module",
]

Options = Union[None, str, Mapping[str, Any]]

def _options(options: Options) -> Optional[bytes]:
    if options is None:
        return None
    if isinstance(options, str):
        s = options
    else:
        s = ",".join(f"{k}={v}" for k, v in options.items())
    if "\0" in s:
        raise error.ValueError("options must not contain NUL characters")
    return s.encode() if s else None


def _devices(dev: Union[None, Device, Sequence[Device]]) -> Tuple[Any, int]:
    if dev is None:
        devs: List[Device] = [cpu(0)]
    elif isinstance(dev, Device):
        devs = [dev]
    elif isinstance(dev, (str, bytes, Mapping)):
        raise error.TypeError(f"expected a tvmrt.Device (e.g. tvmrt.cpu(0)), got {type(dev).__name__}")
    else:
        devs = list(dev)
        if not devs:
            raise error.ValueError("at least one device is needed")
    for d in devs:
        if not isinstance(d, Device):
            raise error.TypeError(f"expected a tvmrt.Device (e.g. tvmrt.cpu(0)), got {type(d).__name__}")
    arr = (DLDevice * len(devs))(*[DLDevice(d.device_type, d.device_id) for d in devs])
    return arr, len(devs)


# --------------------------------------------------------------------------------------------
# The factory function of a module


class _FactoryFunction:
    """``module["default"]``: calling it with devices gives a :class:`GraphModule`."""

    def __init__(self, module: Module) -> None:
        self._module = module

    def __call__(self, *devs: Device, options: Options = None) -> "GraphModule":
        return create(self._module, list(devs) if devs else None, options=options)


# a module's ``default`` function (a graph executor factory's) is this layer's to make
packed.install_default_function(_FactoryFunction)


# --------------------------------------------------------------------------------------------
# Executors


@dataclass(frozen=True)
class TensorInfo:
    """An input or output of a graph: ``index`` for the by-index calls, ``is_param`` for
    weights (params) as opposed to data inputs."""

    index: int
    name: str
    shape: Tuple[int, ...]
    dtype: str
    nbytes: int
    is_param: bool = False


class BenchmarkResult:
    """Timings in seconds, as TVM's ``tvm.runtime.profiling.BenchmarkResult``: each of
    ``results`` is the mean of ``number`` runs."""

    def __init__(self, results: Sequence[float]) -> None:
        self.results = list(results)
        self.mean = statistics.fmean(self.results)
        self.median = statistics.median(self.results)
        self.std = statistics.pstdev(self.results) if len(self.results) > 1 else 0.0
        self.min = min(self.results)
        self.max = max(self.results)

    def __repr__(self) -> str:
        return (
            "Execution time summary:\n"
            f" mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)  \n"
            f"  {self.mean * 1e3:9.4f}    {self.median * 1e3:9.4f}    {self.max * 1e3:9.4f}    "
            f"{self.min * 1e3:9.4f}    {self.std * 1e3:9.4f}   "
        )

    __str__ = __repr__


class _Executor:
    """Owns a ``TVMGraphExecutor*``."""

    __slots__ = ("handle",)

    def __init__(self, handle: c_void_p) -> None:
        self.handle: Optional[c_void_p] = handle

    def free(self) -> None:
        h, self.handle = self.handle, None
        if h is not None and lib is not None:
            check(lib.TVMGraphExecutorFree(h))

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # pragma: no cover
            pass


_c_char_from_buffer = c_char.from_buffer
_KEY_TYPES = (str, int)


def _data_ptr(arr: np.ndarray) -> int:
    """Address of a C-contiguous array's data (the buffer protocol is the cheapest way)."""
    try:
        return addressof(_c_char_from_buffer(arr))
    except (TypeError, ValueError):  # read-only or empty
        return arr.__array_interface__["data"][0]


class _Slot:
    """A cached ``DLTensor`` for one input or output index: the per-call work for a numpy array
    of the same shape and dtype is a pointer update (none when it is the same array again)."""

    __slots__ = ("view", "addr", "shape", "dtype", "array", "index")

    def __init__(self, index: int, arr: np.ndarray) -> None:
        self.index = index
        self.view = _TensorView(arr)
        self.addr = addressof(self.view.tensor)
        self.shape = arr.shape
        self.dtype = arr.dtype
        self.array = self.view.array


def _info(t: TVMTensorInfo, index: int) -> TensorInfo:
    shape = tuple(t.shape[i] for i in range(t.ndim))
    d = t.dtype
    return TensorInfo(
        index=index,
        name=t.name.decode("utf-8", "replace") if t.name else "",
        shape=shape,
        dtype=dtype_to_str(d.code, d.bits, d.lanes),
        nbytes=int(t.nbytes),
        is_param=bool(t.is_param),
    )


class GraphModule:
    """A graph executor (TVM's ``tvm.contrib.graph_executor.GraphModule``).

    ``GraphModule(lib["default"](dev))`` and ``lib["default"](dev)`` are the same thing. One
    executor serves one thread at a time; create one per thread (they share the model's
    weights).
    """

    def __init__(self, module: Union["GraphModule", _Executor]) -> None:
        if isinstance(module, GraphModule):
            self._ex = module._ex
        elif isinstance(module, _Executor):
            self._ex = module
        else:
            raise error.TypeError(
                f"GraphModule wants an executor (module['default'](dev)), got {type(module).__name__}"
            )
        self._in_slots: Dict[Any, _Slot] = {}
        self._out_slots: Dict[int, _Slot] = {}
        self._kept_inputs: Dict[int, Any] = {}
        self._kept_outputs: Dict[int, Any] = {}
        self._input_index: Dict[str, int] = {}
        self._out_info: Dict[int, TensorInfo] = {}
        self._num_inputs: Optional[int] = None
        self._num_outputs: Optional[int] = None

    # -- lifetime --
    def _h(self) -> c_void_p:
        h = self._ex.handle
        if h is None:
            raise TVMError("GraphModule has been freed")
        return h

    @property
    def handle(self) -> c_void_p:
        """The ``TVMGraphExecutor*`` for C calls."""
        return self._h()

    def free(self) -> None:
        """Release the executor now; later calls raise :class:`TVMError`."""
        self._ex.free()
        self._kept_inputs.clear()
        self._kept_outputs.clear()

    def __enter__(self) -> "GraphModule":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.free()

    # -- structure --
    def get_num_inputs(self) -> int:
        """Number of graph inputs, weights included."""
        if self._num_inputs is None:
            n = c_int32()
            check(lib.TVMGraphExecutorGetNumInputs(self._h(), byref(n)))
            self._num_inputs = n.value
        return self._num_inputs

    def get_num_outputs(self) -> int:
        if self._num_outputs is None:
            n = c_int32()
            check(lib.TVMGraphExecutorGetNumOutputs(self._h(), byref(n)))
            self._num_outputs = n.value
        return self._num_outputs

    def get_input_index(self, name: str) -> int:
        """Index of the input called ``name`` (an unknown name raises, listing the inputs)."""
        i = self._input_index.get(name)
        if i is None:
            if not isinstance(name, str):
                raise error.TypeError(f"input names are strings, got {type(name).__name__}")
            out = c_int32()
            check(lib.TVMGraphExecutorGetInputIndex(self._h(), name.encode(), byref(out)))
            i = self._input_index[name] = out.value
        return i

    def get_output_index(self, name: str) -> int:
        out = c_int32()
        check(lib.TVMGraphExecutorGetOutputIndex(self._h(), str(name).encode(), byref(out)))
        return out.value

    def input_info(self, index: int) -> TensorInfo:
        """Name, shape, dtype, size of input ``index`` and whether it is a weight."""
        t = TVMTensorInfo()
        check(lib.TVMGraphExecutorGetInputInfo(self._h(), self._index(index), byref(t)))
        return _info(t, index)

    def output_info(self, index: int) -> TensorInfo:
        """Name, shape, dtype and size of output ``index`` (after a run of a bucketed executor,
        the true shape of that run's output)."""
        t = TVMTensorInfo()
        check(lib.TVMGraphExecutorGetOutputInfo(self._h(), self._index(index), byref(t)))
        return _info(t, index)

    def inputs(self) -> List[TensorInfo]:
        """Every input, weights included, in index order."""
        return [self.input_info(i) for i in range(self.get_num_inputs())]

    def data_inputs(self) -> List[TensorInfo]:
        """The inputs that are data, not weights (what a caller sets on every request)."""
        return [t for t in self.inputs() if not t.is_param]

    def outputs(self) -> List[TensorInfo]:
        return [self.output_info(i) for i in range(self.get_num_outputs())]

    def get_input_info(self) -> Tuple[Dict[str, Tuple[int, ...]], Dict[str, str]]:
        """``(shape_dict, dtype_dict)`` of the data inputs (weights left out), as TVM's."""
        data = self.data_inputs()
        return {t.name: t.shape for t in data}, {t.name: t.dtype for t in data}

    def get_output_info(self) -> Tuple[Dict[str, Tuple[int, ...]], Dict[str, str]]:
        """``(shape_dict, dtype_dict)`` of the outputs."""
        outs = self.outputs()
        return {t.name: t.shape for t in outs}, {t.name: t.dtype for t in outs}

    def _index(self, index: Any) -> int:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise error.TypeError(f"index must be an integer, got {type(index).__name__}")
        i = int(index)
        if not -(2**31) <= i < 2**31:
            raise error.IndexError(f"index {i} is out of range")
        return i

    # -- inputs --
    def _key(self, key: Union[int, str]) -> int:
        if not isinstance(key, (str, int, np.integer)) or isinstance(key, bool):
            raise error.TypeError(f"input keys are names (str) or indices (int), got {type(key).__name__}")
        if isinstance(key, str):
            return self.get_input_index(key)
        return self._index(key)

    def set_input(self, key: Union[int, str, None] = None, value: Any = None, **params: Any) -> None:
        """Copy ``value`` (numpy array, NDArray, DLPack producer or array-like) into the input
        ``key`` (a name or an index); ``set_input(**params)`` sets several by name. The dtype and
        shape must match the input's (a bucketed executor takes any shape its buckets cover)."""
        # Fast path: a C-contiguous numpy array of the shape and dtype last given for this key.
        slot = self._in_slots.get(key) if type(value) is np.ndarray and type(key) in _KEY_TYPES else None
        if slot is not None and value.shape == slot.shape and value.dtype == slot.dtype and value.flags.c_contiguous:
            h = self._ex.handle
            if h is None:
                raise TVMError("GraphModule has been freed")
            if value is not slot.array:
                slot.view.tensor.data = _data_ptr(value)
                slot.array = value
            if _set_input_by_index(h, slot.index, slot.addr):
                raise last_ffi_error()
            if params:
                self.set_input(**params)
            return
        if key is not None:
            if value is None:
                raise error.TypeError(f"set_input({key!r}): no value given")
            self._set_one(key, value)
        elif value is not None:
            raise error.TypeError("set_input: a value without a key (give the input's name or index)")
        for k, v in params.items():
            self._set_one(k, v)

    def _set_one(self, key: Union[int, str], value: Any) -> None:
        h = self._h()
        i = self._key(key)
        if isinstance(value, NDArray):
            check(lib.TVMGraphExecutorSetInputByIndex(h, i, value._h()))
            return
        if not isinstance(value, np.ndarray):
            if hasattr(value, "__dlpack__"):
                value = np.from_dlpack(value)  # a torch tensor etc. on the CPU: no copy
            else:  # lists, scalars: converted to the input's dtype
                value = np.asarray(value, dtype=np_dtype_of(*self._input_dtype(i)))
            view = _TensorView(value)
            check(lib.TVMGraphExecutorSetInputByIndex(h, i, byref(view.tensor)))
            return
        slot = _Slot(i, value)
        check(lib.TVMGraphExecutorSetInputByIndex(h, i, slot.addr))
        # cached for the next call with this key (after a success: a bad key is never cached)
        if isinstance(key, (str, int)) and not isinstance(key, bool) and len(self._in_slots) < 1024:
            self._in_slots[key] = slot

    def _input_dtype(self, i: int) -> Tuple[int, int, int]:
        t = TVMTensorInfo()
        check(lib.TVMGraphExecutorGetInputInfo(self._h(), i, byref(t)))
        return (t.dtype.code, t.dtype.bits, t.dtype.lanes)

    def set_input_zero_copy(self, key: Union[int, str], value: Any) -> None:
        """Let the executor read input ``key`` straight from ``value``'s memory (kept alive here
        until the input is set again). A numpy array that is not 64-byte aligned and C-contiguous
        is copied into an aligned one, with a :class:`UserWarning`."""
        h = self._h()
        i = self._key(key)
        if isinstance(value, NDArray):
            check(lib.TVMGraphExecutorSetInputZeroCopy(h, i, value._h()))
            self._kept_inputs[i] = value
            return
        arr = np.asarray(value)
        if not (arr.flags.c_contiguous and is_aligned(arr)):
            warnings.warn(
                f"set_input_zero_copy({key!r}): the array is not 64-byte aligned and contiguous, so it is "
                "copied; allocate it with tvmrt.empty_aligned() to share it",
                UserWarning,
                stacklevel=2,
            )
            arr = _aligned_copy(arr)
        view = _TensorView(arr)
        check(lib.TVMGraphExecutorSetInputZeroCopy(h, i, byref(view.tensor)))
        self._kept_inputs[i] = view

    def set_output_zero_copy(self, index: int, value: Union[NDArray, np.ndarray]) -> None:
        """Have every run write output ``index`` into ``value`` (an NDArray, or a 64-byte
        aligned, C-contiguous, writable numpy array: see :func:`tvmrt.empty_aligned`)."""
        h = self._h()
        i = self._index(index)
        if isinstance(value, NDArray):
            check(lib.TVMGraphExecutorSetOutputZeroCopy(h, i, value._h()))
        else:
            arr = value
            if not isinstance(arr, np.ndarray) or not (
                arr.flags.c_contiguous and arr.flags.writeable and is_aligned(arr)
            ):
                raise error.ValueError(
                    f"set_output_zero_copy({index}): needs a writable, C-contiguous, 64-byte aligned numpy "
                    "array (tvmrt.empty_aligned) or an NDArray"
                )
            view = _TensorView(arr)
            check(lib.TVMGraphExecutorSetOutputZeroCopy(h, i, byref(view.tensor)))
            value = view
        self._kept_outputs[i] = value

    def load_params(self, params_bytes: Union[bytes, bytearray, memoryview]) -> None:
        """Copy weights from a params blob (TVM's ``save_param_dict`` format)."""
        if not isinstance(params_bytes, (bytes, bytearray, memoryview)):
            raise error.TypeError(f"load_params wants bytes, got {type(params_bytes).__name__}")
        buf = bytes(params_bytes)
        check(lib.TVMGraphExecutorLoadParams(self._h(), buf, len(buf)))

    # -- running --
    def run(self, **inputs: Any) -> None:
        """Run the graph once (after setting ``inputs`` by name, if given)."""
        if inputs:
            self.set_input(**inputs)
        h = self._ex.handle
        if h is None:
            raise TVMError("GraphModule has been freed")
        if _run(h):
            raise last_ffi_error()

    def _output_info_cached(self, i: int) -> TensorInfo:
        info = self._out_info.get(i)
        if info is None:
            info = self._out_info[i] = self.output_info(i)
        return info

    def get_output(self, index: int, out: Union[None, NDArray, np.ndarray] = None) -> Any:
        """Output ``index`` of the last run: a new :class:`NDArray`, or copied into ``out`` (an
        NDArray or a writable numpy array of the output's shape and dtype), which is returned."""
        if type(out) is np.ndarray and type(index) is int:
            slot = self._out_slots.get(index)
            if slot is not None and out.shape == slot.shape and out.dtype == slot.dtype and out.flags.c_contiguous:
                h = self._ex.handle
                if h is None:
                    raise TVMError("GraphModule has been freed")
                if out is not slot.array:
                    if not out.flags.writeable:
                        raise error.ValueError(f"get_output({index}): out must be a C-contiguous, writable numpy array")
                    slot.view.tensor.data = _data_ptr(out)
                    slot.array = out
                if _get_output(h, slot.index, slot.addr):
                    raise last_ffi_error()
                return out
        h = self._h()
        i = self._index(index)
        if out is None:
            info = self._output_info_cached(i)
            out = empty(info.shape, info.dtype)
            check(lib.TVMGraphExecutorGetOutput(h, i, out._h()))
            return out
        if isinstance(out, NDArray):
            check(lib.TVMGraphExecutorGetOutput(h, i, out._h()))
            return out
        if isinstance(out, np.ndarray):
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise error.ValueError(f"get_output({index}): out must be a C-contiguous, writable numpy array")
            slot = _Slot(i, out)
            check(lib.TVMGraphExecutorGetOutput(h, i, slot.addr))
            if isinstance(index, int) and not isinstance(index, bool) and len(self._out_slots) < 1024:
                self._out_slots[index] = slot
            return out
        raise error.TypeError(f"get_output({index}): out must be an NDArray or a numpy array, got {type(out).__name__}")

    def __call__(self, *args: Any, **kwargs: Any) -> List[np.ndarray]:
        """Set the data inputs (positional in index order, or by name), run, and return every
        output as a numpy array."""
        if args:
            data = [t for t in self.data_inputs()]
            if len(args) > len(data):
                raise error.TypeError(f"{len(args)} positional inputs given, the model has {len(data)} data inputs")
            for t, a in zip(data, args):
                self._set_one(t.index, a)
        self.run(**kwargs)
        return [self.get_output(i).numpy() for i in range(self.get_num_outputs())]

    def profile(self, chrome_trace: bool = False) -> str:
        """Run once timing every op: a text table, or a Chrome trace (JSON)."""
        s = c_char_p()
        check(lib.TVMGraphExecutorProfile(self._h(), 1 if chrome_trace else 0, byref(s)))
        return (s.value or b"").decode("utf-8", "replace")

    def benchmark(
        self,
        device: Optional[Device] = None,
        func_name: str = "run",
        repeat: int = 5,
        number: int = 5,
        min_repeat_ms: Optional[int] = None,
        limit_zero_time_iterations: int = 100,
        end_to_end: bool = False,
        cooldown_interval_ms: Optional[int] = 0,
        repeats_to_cooldown: Optional[int] = 1,
        **kwargs: Any,
    ) -> BenchmarkResult:
        """Time ``run()`` as TVM's ``GraphModule.benchmark``: ``repeat`` measurements, each the
        mean of ``number`` runs (raised until a measurement takes ``min_repeat_ms``), after one
        warm-up run. ``end_to_end`` includes setting ``kwargs`` as inputs in each run."""
        if func_name != "run":
            raise error.ValueError(f"benchmark: only func_name='run' is supported, got {func_name!r}")
        if repeat < 1 or number < 1:
            raise error.ValueError("benchmark: repeat and number must be at least 1")
        if kwargs:
            self.set_input(**kwargs)
        h = self._h()
        run = lib.TVMGraphExecutorRun
        check(run(h))
        if min_repeat_ms:
            while True:
                t0 = time.perf_counter()
                for _ in range(number):
                    check(run(h))
                if (time.perf_counter() - t0) * 1e3 >= min_repeat_ms or number >= 1 << 30:
                    break
                number *= 2
        results = []
        for r in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                if end_to_end and kwargs:
                    self.set_input(**kwargs)
                check(run(h))
            results.append((time.perf_counter() - t0) / number)
            if cooldown_interval_ms and repeats_to_cooldown and (r + 1) % repeats_to_cooldown == 0:
                time.sleep(cooldown_interval_ms / 1e3)
        return BenchmarkResult(results)

    def __repr__(self) -> str:
        return f"<tvmrt.GraphModule{' (freed)' if self._ex.handle is None else ''}>"


class BucketedGraphModule(GraphModule):
    """A graph executor over versions of one model compiled at several shapes: ``set_input``
    takes any shape the buckets cover, outputs have the request's true shape."""

    def _output_info_cached(self, i: int) -> TensorInfo:
        return self.output_info(i)  # the shape follows the last run

    @property
    def num_buckets(self) -> int:
        n = c_uint32()
        check(lib.TVMGraphExecutorGetNumBuckets(self._h(), byref(n)))
        return n.value

    @property
    def current_bucket(self) -> int:
        """The bucket the inputs set so far picked (what the next ``run`` runs)."""
        n = c_uint32()
        check(lib.TVMGraphExecutorGetCurrentBucket(self._h(), byref(n)))
        return n.value

    def bucket_input_shape(self, bucket: int, input_index: Union[int, str]) -> Tuple[int, ...]:
        shape = POINTER(c_int64)()
        ndim = c_int32()
        b = self._index(bucket)
        if b < 0:
            raise error.IndexError(f"bucket {b} is out of range")
        check(lib.TVMGraphExecutorGetBucketInputShape(self._h(), b, self._key(input_index), byref(shape), byref(ndim)))
        return tuple(shape[i] for i in range(ndim.value))

    def set_input_zero_copy(self, key: Union[int, str], value: Any) -> None:
        raise TVMError("a bucketed executor has no zero-copy inputs (its buffers change with the bucket)")

    def set_output_zero_copy(self, index: int, value: Any) -> None:
        raise TVMError("a bucketed executor has no zero-copy outputs (its buffers change with the bucket)")

    def __repr__(self) -> str:
        return f"<tvmrt.BucketedGraphModule{' (freed)' if self._ex.handle is None else ''}>"


def create(
    module: Module, dev: Union[None, Device, Sequence[Device]] = None, options: Options = None
) -> GraphModule:
    """A graph executor from a factory module (an ``export_library`` ``.so``) with its weights.
    ``options``: ``"key=value,..."`` or a dict: ``inter_op_threads``, ``intra_op_threads``,
    ``memory_plan`` (see ``TVMGraphExecutorCreateFromFactoryWithOptions``)."""
    if not isinstance(module, Module):
        raise error.TypeError(f"create wants a tvmrt.Module (load_module(path)), got {type(module).__name__}")
    if module.is_vm_executable():
        raise error.TypeError(VM_EXECUTABLE_HINT.format(what=module.path or "the module"))
    devs, n = _devices(dev)
    g = c_void_p()
    opts = _options(options)
    if opts is None:
        check(lib.TVMGraphExecutorCreateFromFactory(module._h(), devs, n, byref(g)))
    else:
        check(lib.TVMGraphExecutorCreateFromFactoryWithOptions(module._h(), devs, n, opts, byref(g)))
    return GraphModule(_Executor(g))


def create_bucketed(
    versions: Union[str, "os.PathLike[str]", Sequence[Union[Module, str, "os.PathLike[str]"]]],
    dev: Union[None, Device, Sequence[Device]] = None,
    options: Options = None,
) -> BucketedGraphModule:
    """A bucketed executor over versions of one model compiled at several shapes: loaded
    modules or paths of their ``.so`` files, or the path of a manifest (one ``.so`` path per
    line, relative to the manifest). ``options`` as for :func:`create`, plus ``pad_value``."""
    devs, n = _devices(dev)
    opts = _options(options)
    g = c_void_p()
    if isinstance(versions, (str, os.PathLike)):
        check(lib.TVMGraphExecutorCreateBucketedFromManifest(os.fspath(versions).encode(), devs, n, opts, byref(g)))
        return BucketedGraphModule(_Executor(g))
    mods = [v if isinstance(v, Module) else load_module(v) for v in versions]
    if not mods:
        raise error.ValueError("create_bucketed: no versions given")
    handles = (c_void_p * len(mods))(*[m._h().value for m in mods])
    check(lib.TVMGraphExecutorCreateBucketed(handles, len(mods), devs, n, opts, byref(g)))
    return BucketedGraphModule(_Executor(g))


def bucket_extents(min_extent: int, max_extent: int, options: Options = None) -> List[int]:
    """The extents to compile versions for, for one dynamic axis ranging over
    ``min_extent..=max_extent`` (``policy=log`` by default: powers of two; or
    ``policy=uniform,step=N``)."""
    opts = _options(options)
    n = c_uint32()
    check(lib.TVMBucketExtents(int(min_extent), int(max_extent), opts, None, 0, byref(n)))
    out = (c_int64 * max(n.value, 1))()
    check(lib.TVMBucketExtents(int(min_extent), int(max_extent), opts, out, n.value, byref(n)))
    return list(out[: n.value])
