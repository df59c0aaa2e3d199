"""Models run by this runtime behind one interface: ``inputs`` / ``outputs`` (name, V2
datatype, shape with -1 for a dimension the model leaves free) and ``run(dict) -> dict``.

- an ``export_library`` ``.so`` of a graph executor factory: :class:`GraphRunner`;
- a bucket manifest (``.buckets``, one ``.so`` per line): :class:`GraphRunner` over a bucketed
  executor, the bucketed dimensions as -1;
- a Relax VM library (``relax.build`` / ``tvm.compile``): :class:`VmRunner` (``main``).

A runner serves one request at a time (its lock); KServe runs requests on worker threads and the
runtime releases the GIL, so several models serve in parallel.
"""

from __future__ import annotations

import threading
from typing import Dict, List

import numpy as np

import tvmrt

from .protocol import v2_datatype


class GraphRunner:
    def __init__(self, path: str) -> None:
        self.lock = threading.Lock()
        if path.endswith(".buckets"):
            self.m = tvmrt.create_bucketed(path, tvmrt.cpu())
            free = self._bucketed_dims()
        else:
            self.m = tvmrt.load_module(path)["default"](tvmrt.cpu())
            free = {}
        self.inputs = [self._spec(t, free.get(t.name, ())) for t in self.m.data_inputs()]
        # An output axis follows a bucketed input axis when their extents agree (the batch).
        sized = {(axis, t.shape[axis]) for t in self.m.data_inputs() for axis in free.get(t.name, ())}
        self.outputs = [self._spec(t, {a for a, d in enumerate(t.shape) if (a, d) in sized}) for t in self.m.outputs()]

    def _bucketed_dims(self) -> Dict[str, tuple]:
        """Input dimensions that differ between buckets."""
        n = self.m.num_buckets
        out = {}
        for t in self.m.data_inputs():
            shapes = {self.m.bucket_input_shape(b, t.index) for b in range(n)}
            out[t.name] = tuple(i for i in range(len(t.shape)) if len({s[i] for s in shapes}) > 1)
        return out

    @staticmethod
    def _spec(t, free) -> Dict:
        return {"name": t.name, "datatype": v2_datatype(t.dtype), "shape": [-1 if i in free else d for i, d in enumerate(t.shape)]}

    def run(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        with self.lock:
            for name, arr in inputs.items():
                self.m.set_input(name, arr)
            self.m.run()
            return {o["name"] or f"output_{i}": self.m.get_output(i).numpy() for i, o in enumerate(self.outputs)}


class VmRunner:
    def __init__(self, lib) -> None:
        self.lock = threading.Lock()
        self.vm = tvmrt.relax.VirtualMachine(lib, tvmrt.cpu())
        main = next(f for f in self.vm.describe()["functions"] if f["name"] == "main")
        self.inputs = [
            {"name": p["name"], "datatype": v2_datatype(p["dtype"]), "shape": [d if isinstance(d, int) else -1 for d in p["shape"]]}
            for p in main["params"]
        ]
        self.outputs: List[Dict] = []  # known after a run: the executable does not describe them

    def run(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        with self.lock:
            out = self.vm["main"](*[inputs[p["name"]] for p in self.inputs])
        arrays = out if isinstance(out, list) else [out]
        return {f"output_{i}": (a.numpy() if hasattr(a, "numpy") else np.asarray(a)) for i, a in enumerate(arrays)}


def load(path: str):
    if path.endswith(".buckets"):
        return GraphRunner(path)
    lib = tvmrt.load_module(path)
    if lib.is_vm_executable():
        return VmRunner(lib)
    return GraphRunner(path)
