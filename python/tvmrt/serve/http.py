"""Checks in front of KServe's HTTP server (added to its FastAPI app before it starts):

- a POST without the binary extension's header and without a Content-Type (tritonclient's plain
  JSON requests) or with a form's (`curl -d`) is JSON; KServe 0.21 would read it as binary;
- a body over the size limit is refused with 413 before it is read;
- a malformed JSON body is 400 with a JSON error (FastAPI's default is 422 ``{"detail"}``);
- a binary-extension body whose tensors' ``binary_data_size`` do not add up to the bytes after
  its JSON header (a truncated payload) is 400 (KServe answers 500);
- a full model queue is 429, a request over its timeout 504 (see :mod:`.model`).
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
        problem = binary_problem(body, header_len)
        if problem:
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


def binary_problem(body: bytes, header_len: bytes):
    """Why a binary-extension body is malformed, or None."""
    if not header_len.isdigit() or int(header_len) > len(body):
        return f"Inference-Header-Content-Length {header_len.decode(errors='replace')} does not fit the {len(body)}-byte body"
    n = int(header_len)
    try:
        header = json.loads(body[:n])
        sizes = [int((t.get("parameters") or {}).get("binary_data_size", 0)) for t in header.get("inputs", [])]
    except (ValueError, TypeError, AttributeError) as e:
        return f"malformed JSON header of a binary request: {e}"
    if sum(sizes) != len(body) - n:
        return f"the inputs' binary_data_size add up to {sum(sizes)} bytes but {len(body) - n} follow the header (truncated?)"
    return None


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


def install(app, max_body_bytes: int) -> None:
    from .model import Busy, TimedOut

    app.add_middleware(RequestChecks, max_body_bytes=max_body_bytes)
    app.add_exception_handler(RequestValidationError, bad_json)
    app.add_exception_handler(Busy, status_of(429))
    app.add_exception_handler(TimedOut, status_of(504))
