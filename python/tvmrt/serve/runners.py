"""Models run by this runtime behind one interface: ``inputs`` / ``outputs`` (name, V2
datatype, shape with -1 for a dimension the model leaves free), ``max_rows`` (the largest batch a
run takes when every input and output has the batch on axis 0, else 0) and
``run(dict) -> dict``.

- an ``export_library`` ``.so`` of a graph executor factory: :class:`GraphRunner`;
- a bucket manifest (``.buckets``, one ``.so`` per line): :class:`GraphRunner` over a bucketed
  executor, the bucketed dimensions as -1;
- a Relax VM library (``relax.build`` / ``tvm.compile``): :class:`VmRunner` (``main``);
- with pipeline options, an ``export_library`` ``.so`` through the request pipeline
  (docs/pipeline.md): :class:`PipelineRunner`, whose ``submit`` overlaps requests over core
  groups.

A runner serves one request at a time (its lock); KServe runs requests on worker threads and the
runtime releases the GIL, so several models serve in parallel.
"""

from __future__ import annotations

import threading
from typing import Dict, List, Optional

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
        self.max_rows = self._max_rows(free)

    def _max_rows(self, free: Dict[str, tuple]) -> int:
        """A bucket set over batch sizes batches: only axis 0 of each input and output free."""
        if not free or any(free.get(t["name"]) != (0,) for t in self.inputs):
            return 0
        if any([i for i, d in enumerate(o["shape"]) if d == -1] != [0] for o in self.outputs):
            return 0
        return max(self.m.bucket_input_shape(b, 0)[0] for b in range(self.m.num_buckets))

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
        self.max_rows = 0

    def run(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        with self.lock:
            out = self.vm["main"](*[inputs[p["name"]] for p in self.inputs])
        arrays = out if isinstance(out, list) else [out]
        return {f"output_{i}": (a.numpy() if hasattr(a, "numpy") else np.asarray(a)) for i, a in enumerate(arrays)}


class PipelineRunner:
    def __init__(self, lib, options: str) -> None:
        self.pipeline = tvmrt.Pipeline(lib, tvmrt.cpu(), options)
        self.inputs = [GraphRunner._spec(t, ()) for t in self.pipeline.data_inputs]
        self.outputs = [GraphRunner._spec(t, ()) for t in self.pipeline.outputs]
        self.max_rows = 0

    def submit(self, inputs: Dict[str, np.ndarray]):
        """A ``concurrent.futures.Future`` of the outputs; returns at once."""
        names = [o["name"] or f"output_{i}" for i, o in enumerate(self.outputs)]
        future = self.pipeline.submit(**{k: np.ascontiguousarray(v) for k, v in inputs.items()})
        out = type(future)()

        def done(f):
            if f.exception() is not None:
                out.set_exception(f.exception())
            else:
                out.set_result(dict(zip(names, f.result())))

        future.add_done_callback(done)
        return out

    def run(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        return self.submit(inputs).result()


def load(path: str, pipeline: Optional[str] = None):
    """The runner for the model at ``path``; ``pipeline``: options of the request pipeline
    (``"core_groups=2,threads_per_group=1"``, ``""`` for its defaults) for a graph model."""
    if path.endswith(".buckets"):
        if pipeline is not None:
            raise ValueError(f"{path}: a bucket manifest does not run through the request pipeline (--pipeline)")
        return GraphRunner(path)
    lib = tvmrt.load_module(path)
    if lib.is_vm_executable():
        if pipeline is not None:
            raise ValueError(f"{path}: a Relax VM library does not run through the request pipeline (--pipeline)")
        return VmRunner(lib)
    if pipeline is not None:
        return PipelineRunner(lib, pipeline)
    return GraphRunner(path)
