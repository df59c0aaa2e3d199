"""The Relax virtual machine, as TVM's ``tvm.relax.VirtualMachine``::

    lib = tvmrt.load_module("model.so")          # relax.build / tvm.compile + export_library
    vm = tvmrt.relax.VirtualMachine(lib, tvmrt.cpu())
    y = vm["main"](x)                             # numpy arrays or NDArrays; an NDArray back
    a, b = vm["main"](x, y)                       # a tuple result: a list of NDArrays

Everything goes through the VM module's functions (``vm_load_executable``,
``vm_initialization``, ``set_input``, ``invoke_stateful``, ``get_output``, ...) over the C API.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import error
from .graph_executor import BenchmarkResult
from .ndarray import Device, NDArray, array, cpu
from .packed import VM_EXECUTABLE_KEYS, Function, Module, call_packed, load_module, pack_args

__all__ = ["Report", "VirtualMachine"]

NAIVE_ALLOCATOR = 1
POOLED_ALLOCATOR = 2
_ALLOCATORS = {"naive": NAIVE_ALLOCATOR, "pooled": POOLED_ALLOCATOR}


def _allocator(memory_cfg: Union[None, str, Dict[Device, str]], dev: Device) -> int:
    if memory_cfg is None:
        return POOLED_ALLOCATOR
    kind = memory_cfg.get(dev, "pooled") if isinstance(memory_cfg, dict) else memory_cfg
    if kind not in _ALLOCATORS:
        raise error.ValueError(f"memory_cfg: unknown allocator {kind!r} (naive or pooled)")
    return _ALLOCATORS[kind]


def _as_ndarray(a: Any) -> Any:
    """numpy arrays (and DLPack producers) become runtime arrays; the rest passes as it is."""
    if isinstance(a, np.ndarray) or (hasattr(a, "__dlpack__") and not isinstance(a, NDArray)):
        return array(np.asarray(a))
    return a


class VirtualMachine:
    """A Relax VM over an executable module (or the path of its ``.so``) on ``device`` (one
    device or a list). ``memory_cfg``: ``None`` or ``"pooled"`` (TVM's default), ``"naive"``,
    or a dict from device to either."""

    NAIVE_ALLOCATOR = NAIVE_ALLOCATOR
    POOLED_ALLOCATOR = POOLED_ALLOCATOR

    def __init__(
        self,
        rt_mod: Union[Module, str],
        device: Union[Device, Sequence[Device]],
        memory_cfg: Union[None, str, Dict[Device, str]] = None,
        profile: bool = False,
    ) -> None:
        lib = rt_mod if isinstance(rt_mod, Module) else load_module(rt_mod)
        key = lib.type_key
        if key not in VM_EXECUTABLE_KEYS:
            raise error.TypeError(
                f"VirtualMachine needs a Relax VM executable, got a `{key}` module"
                + (" (a graph executor factory: use lib['default'](dev))" if key == "GraphExecutorFactory" else "")
            )
        self._exec = lib
        self.module: Module = lib["vm_profiler_load_executable" if profile else "vm_load_executable"]()
        devices = [device] if isinstance(device, Device) else list(device)
        if not devices or not all(isinstance(d, Device) for d in devices):
            raise error.TypeError("VirtualMachine: device must be a tvmrt.Device or a list of them")
        if all(d.device_type != 1 for d in devices):
            devices.append(cpu(0))  # the host, as TVM adds it
        init: List[int] = []
        for d in devices:
            init += [d.device_type, d.device_id, _allocator(memory_cfg, d)]
        self.module["vm_initialization"](*init)
        self._funcs: Dict[str, Function] = {}

    def _vm_func(self, name: str) -> Function:
        f = self._funcs.get(name)
        if f is None:
            f = self._funcs[name] = self.module[name]
        return f

    def __getitem__(self, key: str) -> Any:
        """The VM function ``key``: call it with arrays; a tuple result is a list."""
        if not isinstance(key, str):
            raise error.TypeError(f"VM function names are strings, got {type(key).__name__}")
        return self._vm_func(key)  # numpy and DLPack arguments are converted when packed

    def invoke_closure(self, closure: Any, *args: Any) -> Any:
        return self._vm_func("invoke_closure")(closure, *[_as_ndarray(a) for a in args])

    # -- the stateful interface --
    def _positional(self, func_name: str, args: Sequence[Any], kwargs: Dict[str, Any]) -> List[Any]:
        if not kwargs:
            return list(args)
        arity = self._vm_func("get_function_arity")(func_name)
        names = [self._vm_func("get_function_param_name")(func_name, i) for i in range(arity)]
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            raise error.ValueError(f"{func_name} has no parameter named {unknown[0]!r} (parameters: {names})")
        out = list(args) + [None] * (arity - len(args))
        for k, v in kwargs.items():
            out[names.index(k)] = v
        missing = [names[i] for i, v in enumerate(out) if v is None]
        if missing:
            raise error.ValueError(f"{func_name}: no value for parameter {missing[0]!r}")
        return out

    def set_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """The inputs of a later ``invoke_stateful(func_name)`` (positional, or by parameter name)."""
        vals = [_as_ndarray(a) for a in self._positional(func_name, args, kwargs)]
        self._vm_func("set_input")(func_name, *vals)

    def invoke_stateful(self, func_name: str) -> None:
        """Run ``func_name`` on the inputs ``set_input`` gave; read the result with ``get_outputs``."""
        self._vm_func("invoke_stateful")(func_name)

    def get_outputs(self, func_name: str) -> Any:
        """The result of the last ``invoke_stateful(func_name)``: an NDArray, or a tuple of them
        (nested tuples as nested tuples)."""
        return self._output(func_name, [])

    def _output(self, func_name: str, index: List[int]) -> Any:
        arity = self._vm_func("get_output_arity")(func_name, *index)
        if arity < 0:
            return self._vm_func("get_output")(func_name, *index)
        return tuple(self._output(func_name, index + [i]) for i in range(arity))

    def save_function(self, func_name: str, saved_name: str, *args: Any, include_return: bool = True, **kwargs: Any) -> None:
        """Bind ``args`` to ``func_name`` as a function of no arguments, ``self.module[saved_name]``."""
        vals = [_as_ndarray(a) for a in self._positional(func_name, args, kwargs)]
        self._vm_func("save_function")(func_name, saved_name, include_return, *vals)

    # -- timing --
    def time_evaluator(
        self,
        func_name: str,
        dev: Optional[Device] = None,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: int = 0,
        cooldown_interval_ms: int = 0,
        repeats_to_cooldown: int = 1,
        f_preproc: str = "",
    ) -> Any:
        """A function timing ``func_name`` as TVM's: called with arguments, it times calls on
        them; called with none, it times ``invoke_stateful(func_name)`` on the inputs
        ``set_input`` gave. Returns a :class:`BenchmarkResult` (seconds): ``repeat``
        measurements, each the mean of ``number`` calls (``number`` doubled until one
        measurement takes ``min_repeat_ms``), after one warm-up call."""
        if number < 1 or repeat < 1:
            raise error.ValueError("time_evaluator: number and repeat must be at least 1")
        if f_preproc:
            raise error.NotImplementedError("time_evaluator: f_preproc is not supported")

        def timed(*args: Any, **kwargs: Any) -> BenchmarkResult:
            call = self._timed_call(func_name, args, kwargs)
            call()
            n = number
            while min_repeat_ms and n < 1 << 30:
                t0 = time.perf_counter()
                for _ in range(n):
                    call()
                if (time.perf_counter() - t0) * 1e3 >= min_repeat_ms:
                    break
                n *= 2
            results = []
            for r in range(repeat):
                t0 = time.perf_counter()
                for _ in range(n):
                    call()
                results.append((time.perf_counter() - t0) / n)
                if cooldown_interval_ms and repeats_to_cooldown and (r + 1) % repeats_to_cooldown == 0:
                    time.sleep(cooldown_interval_ms / 1e3)
            return BenchmarkResult(results)

        return timed

    def _timed_call(self, func_name: str, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        """A call of no arguments doing one run: the arguments are converted and packed once."""
        if not args and not kwargs:
            handle, vals = self._vm_func("invoke_stateful").handle, [func_name]
        else:
            handle = self._vm_func(func_name).handle
            vals = [_as_ndarray(a) for a in self._positional(func_name, args, kwargs)]
        values, codes, keep = pack_args(vals)
        n = len(vals)
        return lambda: call_packed(handle, values, codes, n, (keep, vals))

    def profile(self, func_name: str, *args: Any) -> "Report":
        """Run ``func_name`` once on ``args`` with every kernel call timed (a VM made with
        ``profile=True``, as TVM's): a :class:`Report`."""
        if "profile" not in self._funcs and not self.module.implements_function("profile"):
            raise error.ValueError("profile: this VM was not made with profile=True")
        return Report(self._vm_func("profile")(func_name, *[_as_ndarray(a) for a in args]))

    def __repr__(self) -> str:
        lib = getattr(self, "_exec", None)
        return f"<tvmrt.relax.VirtualMachine {lib.path if lib is not None else ''}>"

    def describe(self) -> Dict[str, Any]:
        """The executable's functions and their parameters (dtype, shape; symbolic dimensions by
        name), as the executable's ``describe`` function reports them."""
        import json

        return json.loads(self._exec["describe"]())


class Report:
    """A profiled call, as TVM's ``runtime.profiling.Report`` has it: ``calls`` (a row per
    kernel call: ``Name``, ``Duration (us)``, ``Count``, ``Percent``, ``Device``, ``Argument
    Shapes``) and ``device_metrics`` (the whole call per device); ``json()`` is TVM's JSON."""

    def __init__(self, json_text: str) -> None:
        import json

        self._json = json_text
        data = json.loads(json_text)
        self.calls: List[Dict[str, Any]] = [{k: _metric(v) for k, v in row.items()} for row in data["calls"]]
        self.device_metrics: Dict[str, Dict[str, Any]] = {
            dev: {k: _metric(v) for k, v in row.items()} for dev, row in data["device_metrics"].items()}

    def json(self) -> str:
        return self._json

    def csv(self) -> str:
        headers = sorted({k for row in self.calls for k in row})
        lines = [",".join(headers)]
        for row in self.calls:
            lines.append(",".join(f'"{row[h]}"' if isinstance(row.get(h), str) else str(row.get(h, "")) for h in headers))
        return "\n".join(lines) + "\n"

    def table(self, sort: bool = True, aggregate: bool = True) -> str:
        """A text table: calls of one kernel on the same shapes summed (``aggregate``), the
        longest first (``sort``), a sum row, and the whole call."""
        rows = self.calls
        if aggregate:
            merged: Dict[tuple, Dict[str, Any]] = {}
            for row in rows:
                key = (row["Name"], row.get("Argument Shapes", ""))
                if key not in merged:
                    merged[key] = dict(row)
                else:
                    for k in ("Duration (us)", "Count", "Percent"):
                        merged[key][k] += row[k]
            rows = list(merged.values())
        if sort:
            rows = sorted(rows, key=lambda r: -r["Duration (us)"])
        total = {"Name": "Sum", **{k: sum(r[k] for r in rows) for k in ("Duration (us)", "Count", "Percent")}}
        whole = [{"Name": "Total", **m} for m in self.device_metrics.values()]
        headers = ["Name", "Duration (us)", "Percent", "Count", "Device", "Argument Shapes"]
        cells = [headers] + [[_cell(r.get(h)) for h in headers] for r in rows + [{"Name": "-" * 10}, total] + whole]
        widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
        return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                         for row in cells) + "\n"

    def __str__(self) -> str:
        return self.table()


def _metric(v: Any) -> Any:
    """A metric of TVM's report JSON: a string, or {"microseconds" | "count" | "percent": x}."""
    return next(iter(v.values())) if isinstance(v, dict) else v


def _cell(v: Any) -> str:
    if v is None:
        return ""
    return f"{v:,.2f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)
