"""V2 datatypes, the checks a request must pass before it reaches a model, and the errors a
request can meet on the way."""

from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

# numpy dtype name -> the Open Inference Protocol's datatype.
V2_DATATYPES = {
    "bool": "BOOL",
    "uint8": "UINT8",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "uint64": "UINT64",
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "float16": "FP16",
    "float32": "FP32",
    "float64": "FP64",
}


class BadRequest(ValueError):
    """A request that does not fit the model (answered with 400 and the message)."""


class ReplicaFailed(RuntimeError):
    """The replica running a request died, and so did the one it was sent to next (HTTP 503)."""


def v2_datatype(dtype: str) -> str:
    try:
        return V2_DATATYPES[dtype]
    except KeyError:
        raise BadRequest(f"dtype {dtype} has no Open Inference Protocol datatype") from None


def check_inputs(model: str, specs: Sequence[Dict], given: Sequence[tuple]) -> None:
    """``specs``: the model's inputs (name, datatype, shape with -1 for a free dimension);
    ``given``: (name, datatype, shape) of the request's inputs. Raises :class:`BadRequest`
    naming the first problem."""
    by_name = {s["name"]: s for s in specs}
    names = [g[0] for g in given]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise BadRequest(f"model {model}: unknown input {unknown[0]!r} (inputs: {', '.join(by_name)})")
    missing = [n for n in by_name if n not in names]
    if missing:
        raise BadRequest(f"model {model}: input {missing[0]!r} is missing")
    for name, datatype, shape in given:
        spec = by_name[name]
        if datatype != spec["datatype"]:
            raise BadRequest(f"model {model}: input {name!r} has datatype {datatype}, the model takes {spec['datatype']}")
        want = spec["shape"]
        ok = len(shape) == len(want) and all(w == -1 or w == s for w, s in zip(want, shape))
        if not ok:
            raise BadRequest(f"model {model}: input {name!r} has shape {list(shape)}, the model takes {want}")


def check_array(name: str, arr: np.ndarray, shape: List[int]) -> np.ndarray:
    """The decoded array of an input must hold its declared shape (a truncated binary payload
    or a short JSON data list does not)."""
    if list(arr.shape) != list(shape):
        if arr.size != int(np.prod(shape)):
            raise BadRequest(f"input {name!r}: {arr.size} elements for shape {list(shape)}")
        arr = arr.reshape(shape)
    return arr
