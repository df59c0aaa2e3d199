"""tvmrt: Python bindings for tvm-runtime, a Rust reimplementation of the Apache TVM runtime.

Pure Python over ``libtvm_runtime.so`` (ctypes; the GIL is released during every runtime call),
with the API a TVM user knows::

    import numpy as np, tvmrt
    lib = tvmrt.load_module("model.so")
    dev = tvmrt.cpu(0)
    m = tvmrt.GraphModule(lib["default"](dev))
    m.set_input("data", np.zeros((1, 1, 16, 16), "float32"))
    m.run()
    y = m.get_output(0).numpy()

    vm = tvmrt.relax.VirtualMachine(tvmrt.load_module("relax_model.so"), dev)   # the Relax VM
    y = vm["main"](np.zeros((4, 32), "float32")).numpy()

The library ships inside the package (``pip install ./python`` builds it); ``TVM_RUNTIME_LIBRARY``
(a path to the file; a relative one is taken from the current directory) overrides it, and a
source checkout that is not installed uses its ``target/release/``.

Errors are :class:`TVMError`; as in TVM, an error the runtime reports as ``ValueError: ...``
(``TypeError``, ``IndexError``, ``KeyError``, ``AttributeError``, ...) raises a class that is also
that Python exception (see :mod:`tvmrt.error`), so ``except ValueError`` catches a wrong dtype.
"""

from . import error, graph_executor, ndarray, packed, relax
from . import ndarray as nd
from ._lib import TVMError, library_path
from .graph_executor import (
    BenchmarkResult,
    BucketedGraphModule,
    GraphModule,
    Module,
    TensorInfo,
    bucket_extents,
    create,
    create_bucketed,
    load_module,
)
from .ndarray import (
    ALIGNMENT,
    Device,
    NDArray,
    array,
    cpu,
    device,
    empty,
    empty_aligned,
    from_dlpack,
    is_aligned,
)
from .packed import Function, get_global_func
from .pipeline import Pipeline



def _version() -> str:
    """The installed distribution's version (the crate's, from Cargo.toml); from a source
    checkout that is not installed, Cargo.toml's own."""
    from importlib import metadata
    from pathlib import Path

    try:
        return metadata.version("tvmrt")
    except metadata.PackageNotFoundError:
        cargo = Path(__file__).resolve().parents[2] / "Cargo.toml"
        for line in cargo.read_text().splitlines() if cargo.is_file() else []:
            if line.startswith("version"):
                return line.split('"')[1]
        return "unknown"


__version__ = _version()

__all__ = [
    "ALIGNMENT",
    "BenchmarkResult",
    "BucketedGraphModule",
    "Device",
    "GraphModule",
    "Module",
    "NDArray",
    "Pipeline",
    "TVMError",
    "TensorInfo",
    "array",
    "bucket_extents",
    "cpu",
    "create",
    "create_bucketed",
    "device",
    "empty",
    "empty_aligned",
    "error",
    "from_dlpack",
    "Function",
    "get_global_func",
    "graph_executor",
    "is_aligned",
    "library_path",
    "load_module",
    "nd",
    "ndarray",
    "packed",
    "relax",
]
