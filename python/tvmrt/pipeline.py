"""The request pipeline (``TVMPipeline*``): requests from any thread flow through copy-in,
compute and copy-out stages over core groups; each submit returns a
:class:`concurrent.futures.Future`."""

from __future__ import annotations

import atexit
import threading
import weakref
from concurrent.futures import Future
from ctypes import byref, c_size_t, c_uint64, c_void_p, create_string_buffer
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import error
from ._lib import DLTensor, PipelineCallback, TVMError, check, lib
from .error import from_message
from .graph_executor import Options, TensorInfo, _devices, _options, create
from .ndarray import Device, NDArray, _TensorView, empty_aligned
from .packed import Module

__all__ = ["Pipeline"]


class _Request:
    __slots__ = ("future", "keep", "outputs")

    def __init__(self, future: Future, keep: Any, outputs: List[Any]) -> None:
        self.future = future
        self.keep = keep
        self.outputs = outputs


# Pipelines still open when the interpreter exits are closed first, so that no pipeline thread
# calls back into a finalizing interpreter.
_live: "weakref.WeakSet[Pipeline]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for p in list(_live):
        try:
            p.close()
        except Exception:  # pragma: no cover
            pass


def _make_on_done(lock: threading.Lock, pending: Dict[int, _Request]) -> Any:
    def on_done(request: int, status: int, error: Optional[bytes], user_data: Optional[int]) -> None:
        with lock:
            req = pending.pop(user_data or 0, None)
        if req is None:  # pragma: no cover - would be a runtime bug
            return
        if status == 0:
            req.future.set_result(req.outputs)
        else:
            msg = error.decode("utf-8", "replace") if error else "request failed"
            req.future.set_exception(from_message(msg))

    return on_done


class Pipeline:
    """A request pipeline over the model of a factory module.

    ``options``: ``"key=value,..."`` or a dict: ``core_groups``, ``threads_per_group``,
    ``in_flight``, ``cpus``, ``trace`` (see ``TVMPipelineCreate``); keyword arguments of the
    same names are added to them.

    ``submit(x)`` (the data inputs in index order, or by name) returns a Future whose result is
    the list of outputs (numpy arrays, or the ``outputs`` given). A failed request's Future
    raises :class:`TVMError` with the runtime's message.
    """

    def __init__(
        self,
        module: Module,
        dev: Union[None, Device, Sequence[Device]] = None,
        options: Options = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(module, Module):
            raise error.TypeError(f"Pipeline wants a tvmrt.Module (load_module(path)), got {type(module).__name__}")
        opts: Dict[str, Any] = {}
        if isinstance(options, str):
            for kv in filter(None, options.split(",")):
                k, _, v = kv.partition("=")
                opts[k.strip()] = v
        elif options:
            opts.update(options)
        opts.update(kwargs)
        # The graph's data inputs and outputs, from a short-lived executor.
        with create(module, dev) as g:
            self.data_inputs: List[TensorInfo] = g.data_inputs()
            self.outputs: List[TensorInfo] = g.outputs()
        devs, n = _devices(dev)
        self._lock = threading.Lock()
        self._pending: Dict[int, _Request] = {}
        self._next = 1
        self._handle: Optional[c_void_p] = None
        h = c_void_p()
        check(lib.TVMPipelineCreate(module._h(), devs, n, _options(opts), byref(h)))
        self._handle = h
        # The callback refers to the pending table, not to the pipeline, so that dropping the
        # pipeline frees it (never from a pipeline thread inside a callback).
        self._callback = PipelineCallback(_make_on_done(self._lock, self._pending))
        _live.add(self)

    def _h(self) -> c_void_p:
        h = self._handle
        if h is None:
            raise TVMError("Pipeline has been closed")
        return h

    def submit(
        self,
        *inputs: Any,
        outputs: Optional[Sequence[Union[np.ndarray, NDArray]]] = None,
        **named: Any,
    ) -> "Future[List[Any]]":
        """Queue one request and return its Future at once. Inputs: one per data input, in
        index order (or by name); their memory is read while the request runs (numpy arrays
        are kept alive until then; do not write to them meanwhile)."""
        h = self._h()
        if named:
            by_name = {t.name: t for t in self.data_inputs}
            unknown = [k for k in named if k not in by_name]
            if unknown:
                raise error.ValueError(f"unknown data input(s) {unknown}; the model's are {list(by_name)}")
            if inputs:
                raise error.TypeError("give the inputs positionally or by name, not both")
            missing = [t.name for t in self.data_inputs if t.name not in named]
            if missing:
                raise error.ValueError(f"missing data input(s) {missing}")
            inputs = tuple(named[t.name] for t in self.data_inputs)
        if len(inputs) != len(self.data_inputs):
            raise error.TypeError(
                f"{len(inputs)} inputs given, the model has {len(self.data_inputs)} data inputs "
                f"({[t.name for t in self.data_inputs]})"
            )
        keep: List[Any] = []
        in_arr = (DLTensor * max(len(inputs), 1))()
        for k, x in enumerate(inputs):
            if isinstance(x, NDArray):
                in_arr[k] = x._h().contents
                keep.append(x)
            else:
                v = _TensorView(np.asarray(x))
                in_arr[k] = v.tensor
                keep.append(v)
        if outputs is None:
            outs: List[Any] = []
            for t in self.outputs:
                outs.append(empty_aligned(t.shape, t.dtype))
        else:
            outs = list(outputs)
            if len(outs) != len(self.outputs):
                raise error.TypeError(f"{len(outs)} outputs given, the model has {len(self.outputs)}")
        out_arr = (DLTensor * max(len(outs), 1))()
        for k, o in enumerate(outs):
            if isinstance(o, NDArray):
                out_arr[k] = o._h().contents
            elif isinstance(o, np.ndarray) and o.flags.c_contiguous and o.flags.writeable:
                v = _TensorView(o)
                out_arr[k] = v.tensor
                keep.append(v)
            else:
                raise error.ValueError(f"output {k}: needs an NDArray or a writable, C-contiguous numpy array")
        keep.append((in_arr, out_arr))
        fut: Future = Future()
        fut.set_running_or_notify_cancel()
        with self._lock:
            key = self._next
            self._next += 1
            self._pending[key] = _Request(fut, keep, outs)
        rid = c_uint64()
        rc = lib.TVMPipelineSubmitWithCallback(
            h, in_arr, len(inputs), out_arr, len(outs), self._callback, c_void_p(key), byref(rid)
        )
        if rc != 0:
            with self._lock:
                self._pending.pop(key, None)
            check(rc)
        return fut

    def run(self, *inputs: Any, **named: Any) -> List[Any]:
        """Submit one request and wait for its outputs."""
        return self.submit(*inputs, **named).result()

    def trace(self) -> str:
        """The Chrome trace of the requests so far (the pipeline needs ``trace=1``)."""
        # The caller's own copy: ask for the size, then copy into a buffer of that size (again
        # if requests done in between made the trace longer).
        size = c_size_t(0)
        check(lib.TVMPipelineGetTraceInto(self._h(), None, 0, byref(size)))
        while True:
            buf = create_string_buffer(size.value)
            check(lib.TVMPipelineGetTraceInto(self._h(), buf, len(buf), byref(size)))
            if size.value <= len(buf):
                return buf.value.decode("utf-8", "replace")

    def close(self) -> None:
        """Finish the requests being processed, cancel the queued ones (their Futures raise
        TVMError "cancelled"), and free the pipeline. A second call does nothing."""
        h, self._handle = self._handle, None
        if h is not None and lib is not None:
            check(lib.TVMPipelineFree(h))

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover
            pass
