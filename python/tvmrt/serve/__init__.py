"""Serving models over KServe's Open Inference Protocol (V2: REST and gRPC):
``python -m tvmrt.serve --model NAME=PATH [--model NAME=PATH ...] --http-port P [--grpc-port G]
[--host H]`` (HTTP and gRPC listen on ``H``, by default 127.0.0.1: this machine only).

KServe's ``ModelServer`` is the server (HTTP with the binary tensor extension, gRPC
``GRPCInferenceService``, health and metadata endpoints); this package plugs models run by this
runtime into it (:mod:`.runners`), checks requests against each model's inputs before they reach
the runtime (:mod:`.protocol`), and tags every response with ``served_by`` (host/pid). See
docs/serving.md.
"""
