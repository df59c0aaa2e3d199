"""Checks in front of KServe's HTTP server (added to its FastAPI app before it starts):

- a POST without the binary extension's header and without a Content-Type (tritonclient's plain
  JSON requests) or with a form's (`curl -d`) is JSON; KServe 0.21 would read it as binary;
- a body over the size limit is refused with 413 before it is read;
- a malformed JSON body is 400 with a JSON error (FastAPI's default is 422 ``{"detail"}``);
- a binary-extension body whose ``Inference-Header-Content-Length`` does not fit it is 400;
- a binary-extension body is read by :func:`binary_request` in place of KServe 0.21's
  ``InferRequest.from_bytes``: each tensor stays bytes until a model decodes it (KServe turns it
  into a Python list of numbers, which the model turns back: about 10 ms of CPU for a 48 KB
  image), and tensors whose ``binary_data_size`` do not add up to the bytes after the JSON
  header (a truncated payload) are 400 (KServe answers 500);
- a full model queue is 429, a request over its timeout 504 (see :mod:`.model`), a request whose
  replicas died under it 503 (:mod:`.replicas`).
"""

from __future__ import annotations

import json

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse


# What `curl -d` and urllib send by default: a JSON body under a form's content type.
FORM = b"application/x-www-form-urlencoded"


class RequestChecks:
    def __init__(self, app, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body_bytes):
            return await reply(send, 413, f"request body of {length.decode(errors='replace')} bytes is over the limit of {self.max_body_bytes}")
        header_len = headers.get(b"inference-header-content-length")
        if header_len is None:
            if headers.get(b"content-type", FORM) == FORM:
                kept = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
                scope = dict(scope, headers=kept + [(b"content-type", b"application/json")])
            return await self.app(scope, receive, send)
        body = await read_body(receive, self.max_body_bytes)
        if body is None:
            return await reply(send, 413, f"request body over the limit of {self.max_body_bytes} bytes")
        if not header_len.isdigit() or int(header_len) > len(body):
            problem = f"Inference-Header-Content-Length {header_len.decode(errors='replace')} does not fit the {len(body)}-byte body"
            return await reply(send, 400, problem)
        return await self.app(scope, replay(body), send)


async def read_body(receive, limit: int):
    chunks, size = [], 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def replay(body: bytes):
    sent = False

    async def receive():
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def reply(send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def bad_json(request, exc: RequestValidationError):
    return JSONResponse(status_code=400, content={"error": f"malformed request: {exc.errors()}"})


def status_of(code: int):
    async def handler(request, exc):
        return JSONResponse(status_code=code, content={"error": str(exc)})

    return handler


def binary_request(cls, req_bytes: bytes, json_length: int, model_name: str):
    """``InferRequest.from_bytes`` keeping each binary tensor as its bytes (``as_numpy`` reads
    them without a copy); a JSON ``data`` list is kept as KServe keeps it."""
    import orjson
    from kserve.errors import InvalidInput

    try:
        return read_binary_request(cls, orjson.loads(req_bytes[:json_length]), req_bytes, json_length, model_name)
    except orjson.JSONDecodeError as e:
        raise InvalidInput(f"Unrecognized request format: {e}") from None
    except (KeyError, TypeError, AttributeError) as e:
        raise InvalidInput(f"malformed inference header: {type(e).__name__}: {e}") from None


def read_binary_request(cls, header, req_bytes: bytes, json_length: int, model_name: str):
    from kserve.errors import InvalidInput
    from kserve.protocol.infer_type import InferInput, RequestedOutput

    inputs, start = [], json_length
    for item in header.get("inputs") or []:
        parameters = item.get("parameters") or {}
        i = InferInput(name=item["name"], shape=item["shape"], datatype=item["datatype"], parameters=parameters)
        if item.get("data") is not None:
            i.data = item["data"]
        elif isinstance(parameters.get("binary_data_size"), int):
            i._raw_data = req_bytes[start:start + parameters["binary_data_size"]]
            start += parameters["binary_data_size"]
        else:
            raise InvalidInput(f"input {item['name']!r} of model {model_name!r} has neither data nor binary_data_size")
        inputs.append(i)
    if start != len(req_bytes):
        raise InvalidInput(f"the inputs' binary_data_size add up to {start - json_length} bytes but "
                           f"{len(req_bytes) - json_length} follow the header (truncated?)")
    outputs = [RequestedOutput(name=o["name"], parameters=o.get("parameters")) for o in header["outputs"]] if header.get("outputs") else None
    return cls(model_name=model_name, request_id=header.get("id"), parameters=header.get("parameters"),
               infer_inputs=inputs, request_outputs=outputs)


def install(app, max_body_bytes: int) -> None:
    from .model import Busy, TimedOut
    from .protocol import ReplicaFailed

    from kserve.protocol.infer_type import InferRequest

    InferRequest.from_bytes = classmethod(binary_request)
    app.add_middleware(RequestChecks, max_body_bytes=max_body_bytes)
    app.add_exception_handler(RequestValidationError, bad_json)
    app.add_exception_handler(Busy, status_of(429))
    app.add_exception_handler(TimedOut, status_of(504))
    app.add_exception_handler(ReplicaFailed, status_of(503))
