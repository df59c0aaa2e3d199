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

from . import runners
from .protocol import BadRequest, check_array, check_inputs, v2_datatype

SERVED_BY = f"{socket.gethostname()}/{os.getpid()}"


class RuntimeModel(Model):
    def __init__(self, name: str, path: str) -> None:
        super().__init__(name)
        self.path = path
        self.runner = None

    def load(self) -> bool:
        self.runner = runners.load(self.path)
        self.ready = True
        return self.ready

    def get_input_types(self):
        return self.runner.inputs

    def get_output_types(self):
        return self.runner.outputs

    async def predict(self, payload: InferRequest, headers: Optional[Dict[str, str]] = None, response_headers=None) -> InferResponse:
        if not isinstance(payload, InferRequest):
            raise InvalidInput("this server speaks the Open Inference Protocol (V2): POST /v2/models/NAME/infer")
        try:
            given = [(i.name, i.datatype, list(i.shape)) for i in payload.inputs]
            check_inputs(self.name, self.runner.inputs, given)
            arrays = {i.name: check_array(i.name, decode(i), list(i.shape)) for i in payload.inputs}
        except BadRequest as e:
            raise InvalidInput(str(e)) from None
        # The runtime releases the GIL: the event loop keeps serving while the model runs.
        outputs = await asyncio.to_thread(self.runner.run, arrays)
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
