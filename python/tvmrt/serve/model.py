"""A model run by this runtime as a KServe model (imported only after KServe's arguments are set:
KServe parses ``sys.argv`` when it is imported)."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from typing import Dict, Optional

from kserve import Model
from kserve.errors import InvalidInput
from kserve.protocol.infer_type import InferOutput, InferRequest, InferResponse
from prometheus_client import Counter, Gauge, Histogram

from . import runners
from .batching import Batcher
from .protocol import BadRequest, check_array, check_inputs, v2_datatype

SERVED_BY = f"{socket.gethostname()}/{os.getpid()}"

# Served on KServe's /metrics with its own metrics.
REQUESTS = Counter("tvmrt_requests", "Inference requests by model and outcome", ["model", "outcome"])
LATENCY = Histogram("tvmrt_request_seconds", "Time from accepting a request to its answer", ["model"])
QUEUE = Gauge("tvmrt_queue_depth", "Requests accepted and not yet answered", ["model"])
BATCH = Histogram("tvmrt_batch_size", "Requests per model run", ["model"], buckets=(1, 2, 4, 8, 16, 32, 64))


class Busy(RuntimeError):
    """The model's queue is full (HTTP 429)."""


class TimedOut(RuntimeError):
    """The request took longer than its timeout (HTTP 504)."""


class Local:
    """A model run in this process, one run at a time (through the request pipeline, with
    ``pipeline`` options: up to ``PIPELINED`` at once). A run is handed to a thread (the runtime
    releases the GIL) unless the model's runs are short (under ``INLINE_S``, on average): then
    it runs on the event loop, which costs less than the hand-over and blocks the loop no
    longer than decoding a request does."""

    INLINE_S = 200e-6
    # Requests kept submitted to a request pipeline (which queues past its own in_flight).
    PIPELINED = 16

    def __init__(self, path: str, pipeline: Optional[str] = None) -> None:
        self.runner = runners.load(path, pipeline)
        self.inputs, self.outputs, self.max_rows = self.runner.inputs, self.runner.outputs, self.runner.max_rows
        self.piped = hasattr(self.runner, "submit")
        self.workers = self.PIPELINED if self.piped else 1
        self.mean_s = float("inf")  # of recent runs (until the first, unknown: a thread)

    async def run(self, arrays):
        if self.piped:
            return await asyncio.wrap_future(self.runner.submit(arrays)), SERVED_BY
        if self.mean_s < self.INLINE_S:
            outputs = self.timed_run(arrays)
        else:
            outputs = await asyncio.to_thread(self.timed_run, arrays)
        return outputs, SERVED_BY

    def timed_run(self, arrays):
        t = time.perf_counter()
        outputs = self.runner.run(arrays)
        took = time.perf_counter() - t
        self.mean_s = took if self.mean_s == float("inf") else 0.9 * self.mean_s + 0.1 * took
        return outputs


class RuntimeModel(Model):
    """``backend(path)`` gives what runs the model: ``inputs``, ``outputs``, ``max_rows`` (the
    most rows a run batches, 0 when it does not), ``workers`` (runs at once) and ``async
    run(arrays) -> (arrays, served_by)``: :class:`Local`, or replicas on Ray (:mod:`.replicas`)."""

    def __init__(self, name: str, path: str, max_queue: int = 64, timeout_s: float = 30.0,
                 max_batch_delay_s: float = 0.0, batching: bool = True, backend=Local) -> None:
        super().__init__(name)
        self.path = path
        self.backend = backend
        self.runner = None
        self.batcher = None
        self.max_queue = max_queue
        self.timeout_s = timeout_s
        self.max_batch_delay_s = max_batch_delay_s
        self.batching = batching
        self.in_flight = 0

    def load(self) -> bool:
        self.runner = self.backend(self.path)
        rows = self.runner.max_rows if self.batching else 0
        self.batcher = Batcher(self.runner.run, rows, self.runner.workers, self.max_batch_delay_s,
                               on_batch=BATCH.labels(self.name).observe)
        # This model's series, looked up once.
        self.outcomes = {o: REQUESTS.labels(self.name, o) for o in ("ok", "busy", "timeout", "bad_request")}
        self.queue, self.latency = QUEUE.labels(self.name), LATENCY.labels(self.name)
        self.ready = True
        return self.ready

    def get_input_types(self):
        return self.runner.inputs

    def get_output_types(self):
        return self.runner.outputs

    async def run_bounded(self, arrays):
        """Run the request through the model's batcher, at most `max_queue` requests accepted
        at once, each answered within `timeout_s`."""
        if self.in_flight >= self.max_queue:
            self.outcomes["busy"].inc()
            raise Busy(f"model {self.name}: {self.in_flight} requests in progress, the limit is {self.max_queue}; retry later")
        self.in_flight += 1
        self.queue.inc()
        try:
            with self.latency.time():
                outputs = await asyncio.wait_for(self.batcher.submit(arrays), self.timeout_s)
            self.outcomes["ok"].inc()
            return outputs
        except asyncio.TimeoutError:
            self.outcomes["timeout"].inc()
            raise TimedOut(f"model {self.name}: no answer within {self.timeout_s} s") from None
        finally:
            self.in_flight -= 1
            self.queue.dec()

    async def predict(self, payload: InferRequest, headers: Optional[Dict[str, str]] = None, response_headers=None) -> InferResponse:
        if not isinstance(payload, InferRequest):
            raise InvalidInput("this server speaks the Open Inference Protocol (V2): POST /v2/models/NAME/infer")
        try:
            given = [(i.name, i.datatype, list(i.shape)) for i in payload.inputs]
            check_inputs(self.name, self.runner.inputs, given)
            arrays = {i.name: check_array(i.name, decode(i), list(i.shape)) for i in payload.inputs}
        except BadRequest as e:
            self.outcomes["bad_request"].inc()
            raise InvalidInput(str(e)) from None
        outputs, served_by = await self.run_bounded(arrays)
        binary = payload.use_binary_outputs
        infer_outputs = []
        for name, arr in outputs.items():
            out = InferOutput(name=name, shape=list(arr.shape), datatype=v2_datatype(str(arr.dtype)))
            # Binary for both protocols works in KServe 0.21 (a plain numpy array breaks its gRPC path).
            out.set_data_from_numpy(arr, binary_data=True)
            infer_outputs.append(out)
        return InferResponse(
            response_id=payload.id or "",
            model_name=self.name,
            infer_outputs=infer_outputs,
            from_grpc=payload.from_grpc,
            use_binary_outputs=binary,
            requested_outputs=payload.request_outputs,
            parameters={"served_by": served_by},
        )


def decode(i):
    """An input's array; a payload that does not decode (truncated binary data, wrong JSON data)
    is a bad request, not a server error."""
    try:
        return i.as_numpy()
    except Exception as e:  # noqa: BLE001 - KServe raises several kinds here
        raise BadRequest(f"input {i.name!r}: cannot decode its data: {e}") from None
