"""``python -m tvmrt.serve``: parse our arguments, hand KServe only its own, start its server."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional


def parse(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tvmrt.serve", description="Serve models over KServe's Open Inference Protocol.")
    p.add_argument("--model", action="append", required=True, metavar="NAME=PATH",
                   help="a model: an export_library .so, a bucket manifest (.buckets) or a Relax VM library; repeatable")
    p.add_argument("--http-port", type=int, required=True)
    p.add_argument("--grpc-port", type=int, help="also serve gRPC (GRPCInferenceService) on this port")
    p.add_argument("--max-body-bytes", type=int, default=64 << 20, help="largest request body accepted (413 above)")
    p.add_argument("--max-queue", type=int, default=64, help="requests a model accepts at once (429 above)")
    p.add_argument("--timeout-s", type=float, default=30.0, help="longest a request may take (504 after)")
    p.add_argument("--replicas", type=int, help="not yet supported: replicas on a Ray cluster")
    p.add_argument("--ray-address", help="not yet supported: a Ray cluster to place replicas on")
    a = p.parse_args(argv)
    models = {}
    for item in a.model:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            p.error(f"--model {item!r}: expected NAME=PATH")
        if name in models:
            p.error(f"--model {name}: given twice")
        models[name] = path
    a.models = models
    if a.replicas or a.ray_address:
        p.error("--replicas and --ray-address (Ray Serve replicas) are not supported yet")
    return a


def main(argv: Optional[List[str]] = None) -> int:
    a = parse(argv)
    # KServe parses sys.argv when imported: give it only its own options.
    kserve_argv = [sys.argv[0], "--http_port", str(a.http_port)]
    if a.grpc_port:
        kserve_argv += ["--grpc_port", str(a.grpc_port), "--enable_grpc", "true"]
    else:
        kserve_argv += ["--enable_grpc", "false"]
    sys.argv = kserve_argv
    from kserve import ModelServer, model_server

    from . import http
    from .model import RuntimeModel

    http.install(model_server.app, a.max_body_bytes)

    models = []
    for name, path in a.models.items():
        m = RuntimeModel(name, path, max_queue=a.max_queue, timeout_s=a.timeout_s)
        m.load()
        models.append(m)
    ModelServer(http_port=a.http_port, grpc_port=a.grpc_port or 8081, enable_grpc=bool(a.grpc_port)).start(models)
    return 0
