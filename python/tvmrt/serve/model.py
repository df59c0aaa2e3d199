"""A model run by this runtime as a KServe model (imported only after KServe's arguments are set:
KServe parses ``sys.argv`` when it is imported)."""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Dict, Optional

from kserve import Model
from kserve.errors import InvalidInput
from kserve.protocol.infer_type import InferOutput, InferRequest, InferResponse
from prometheus_client import Counter, Gauge, Histogram

from . import runners
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


class RuntimeModel(Model):
    def __init__(self, name: str, path: str, max_queue: int = 64, timeout_s: float = 30.0) -> None:
        super().__init__(name)
        self.path = path
        self.runner = None
        self.max_queue = max_queue
        self.timeout_s = timeout_s
        self.in_flight = 0

    def load(self) -> bool:
        self.runner = runners.load(self.path)
        self.ready = True
        return self.ready

    def get_input_types(self):
        return self.runner.inputs

    def get_output_types(self):
        return self.runner.outputs

    async def run_bounded(self, arrays):
        """Run the model off the event loop (the runtime releases the GIL), at most `max_queue`
        requests accepted at once, each answered within `timeout_s`."""
        if self.in_flight >= self.max_queue:
            REQUESTS.labels(self.name, "busy").inc()
            raise Busy(f"model {self.name}: {self.in_flight} requests in progress, the limit is {self.max_queue}; retry later")
        self.in_flight += 1
        QUEUE.labels(self.name).inc()
        try:
            with LATENCY.labels(self.name).time():
                outputs = await asyncio.wait_for(asyncio.to_thread(self.runner.run, arrays), self.timeout_s)
            BATCH.labels(self.name).observe(1)
            REQUESTS.labels(self.name, "ok").inc()
            return outputs
        except asyncio.TimeoutError:
            REQUESTS.labels(self.name, "timeout").inc()
            raise TimedOut(f"model {self.name}: no answer within {self.timeout_s} s") from None
        finally:
            self.in_flight -= 1
            QUEUE.labels(self.name).dec()

    async def predict(self, payload: InferRequest, headers: Optional[Dict[str, str]] = None, response_headers=None) -> InferResponse:
        if not isinstance(payload, InferRequest):
            raise InvalidInput("this server speaks the Open Inference Protocol (V2): POST /v2/models/NAME/infer")
        try:
            given = [(i.name, i.datatype, list(i.shape)) for i in payload.inputs]
            check_inputs(self.name, self.runner.inputs, given)
            arrays = {i.name: check_array(i.name, decode(i), list(i.shape)) for i in payload.inputs}
        except BadRequest as e:
            REQUESTS.labels(self.name, "bad_request").inc()
            raise InvalidInput(str(e)) from None
        outputs = await self.run_bounded(arrays)
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
            parameters={"served_by": SERVED_BY},
        )


def decode(i):
    """An input's array; a payload that does not decode (truncated binary data, wrong JSON data)
    is a bad request, not a server error."""
    try:
        return i.as_numpy()
    except Exception as e:  # noqa: BLE001 - KServe raises several kinds here
        raise BadRequest(f"input {i.name!r}: cannot decode its data: {e}") from None
