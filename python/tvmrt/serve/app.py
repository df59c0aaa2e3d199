"""``python -m tvmrt.serve``: parse our arguments, hand KServe only its own, start its server."""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from typing import List, Optional


def parse(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tvmrt.serve", description="Serve models over KServe's Open Inference Protocol.")
    p.add_argument("--model", action="append", required=True, metavar="NAME=PATH",
                   help="a model: an export_library .so, a bucket manifest (.buckets) or a Relax VM library; repeatable")
    p.add_argument("--host", default="127.0.0.1",
                   help="address the HTTP and gRPC servers listen on (default 127.0.0.1: this machine only; "
                        "0.0.0.0: every interface, so other machines and containers reach the models)")
    p.add_argument("--http-port", type=int, required=True)
    p.add_argument("--grpc-port", type=int, help="also serve gRPC (GRPCInferenceService) on this port")
    p.add_argument("--max-body-bytes", type=int, default=64 << 20, help="largest request body accepted (413 above)")
    p.add_argument("--max-queue", type=int, default=64, help="requests a model accepts at once (429 above)")
    p.add_argument("--timeout-s", type=float, default=30.0, help="longest a request may take (504 after)")
    p.add_argument("--max-batch-delay-ms", type=float, default=0.0,
                   help="how long a batch waits for more requests (a bucketed model over batch sizes); 0: batch what queued while the last run ran")
    p.add_argument("--no-batching", action="store_true", help="run every request alone")
    p.add_argument("--pipeline", metavar="OPTIONS",
                   help='run graph models through the request pipeline over core groups: "core_groups=2,threads_per_group=1" ("" for its defaults)')
    p.add_argument("--log-requests", action="store_true",
                   help="a log line per request (KServe's access and latency lines); off by default: they cost about 0.2 ms a request")
    p.add_argument("--replicas", type=int, help="run each model as this many Ray Serve replicas (a local Ray instance unless --ray-address)")
    p.add_argument("--ray-address", help="the Ray cluster to place replicas on (host:port, or auto)")
    p.add_argument("--replica-cpus", type=float, default=1.0, help="CPUs Ray reserves for each replica")
    p.add_argument("--max-replicas-per-node", type=int, help="at most this many replicas of a model on one node (1: one per node)")
    p.add_argument("--replica-core-groups", type=int, metavar="G",
                   help="split each node's CPUs into G core groups and pin each replica to one (one replica per core group: at most G replicas of a model per node)")
    p.add_argument("--load-from-path", action="store_true",
                   help="replicas read PATH themselves (a path every node can read) instead of bytes shipped by this process")
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
    if a.max_batch_delay_ms < 0:
        p.error(f"--max-batch-delay-ms {a.max_batch_delay_ms}: must be 0 or more")
    for flag, value in (("--replicas", a.replicas), ("--replica-cpus", a.replica_cpus),
                        ("--max-replicas-per-node", a.max_replicas_per_node), ("--replica-core-groups", a.replica_core_groups)):
        if value is not None and value <= 0:
            p.error(f"{flag} {value}: must be more than 0")
    a.on_ray = bool(a.replicas or a.ray_address)
    if a.replica_core_groups:
        if not a.on_ray:
            p.error("--replica-core-groups: replicas run on Ray; give --replicas or --ray-address")
        if a.max_replicas_per_node and a.max_replicas_per_node > a.replica_core_groups:
            p.error(f"--max-replicas-per-node {a.max_replicas_per_node}: more than the {a.replica_core_groups} core groups of a node")
        a.max_replicas_per_node = a.max_replicas_per_node or a.replica_core_groups
    return a


def main(argv: Optional[List[str]] = None) -> int:
    a = parse(argv)
    # KServe parses sys.argv when imported: give it only its own options.
    sys.argv = kserve_argv(a)
    from kserve import ModelServer, model_server

    from . import http, listen

    http.install(model_server.app, a.max_body_bytes)
    # KServe 0.21 answers every request with FastAPI's ORJSONResponse, which FastAPI 0.131 and
    # later (Ray Serve 2.60 needs 0.133) deprecate with a warning per response: that warning
    # is silenced here, and no other.
    warnings.filterwarnings("ignore", message="ORJSONResponse is deprecated", category=UserWarning)
    listen.install(a.host)
    if a.on_ray:
        from . import replicas

        replicas.connect(a.ray_address)
    try:
        models = load_models(a)
        if models is None:
            return 2
        server = ModelServer(http_port=a.http_port, grpc_port=a.grpc_port or 8081, enable_grpc=bool(a.grpc_port))
        if not a.log_requests:
            quiet_requests()
        server.start(models)
    finally:
        if a.on_ray:
            replicas.release(list(a.models))
    return 0


def kserve_argv(a: argparse.Namespace) -> List[str]:
    argv = [sys.argv[0], "--http_port", str(a.http_port)]
    if a.grpc_port:
        argv += ["--grpc_port", str(a.grpc_port), "--enable_grpc", "true"]
    else:
        argv += ["--enable_grpc", "false"]
    if not a.log_requests:
        argv += ["--enable_latency_logging", "false"]
    return argv


def load_models(a: argparse.Namespace):
    """The models, loaded (on their replicas); None after saying why one could not be."""
    import tvmrt

    from .model import Local, RuntimeModel

    models = []
    for name, path in a.models.items():
        m = RuntimeModel(name, path, max_queue=a.max_queue, timeout_s=a.timeout_s,
                         max_batch_delay_s=a.max_batch_delay_ms / 1e3, batching=not a.no_batching,
                         backend=ray_backend(a, name) if a.on_ray else functools.partial(Local, pipeline=a.pipeline))
        try:
            m.load()
        except (ValueError, OSError, tvmrt.TVMError) as e:
            print(f"python -m tvmrt.serve: model {name}: {e}", file=sys.stderr)
            return None
        models.append(m)
    return models


def ray_backend(a: argparse.Namespace, name: str):
    from .replicas import RayReplicas

    return lambda path: RayReplicas(name, path, a.replicas or 1, a.replica_cpus, a.max_replicas_per_node,
                                    ship=not a.load_from_path, pipeline=a.pipeline, core_groups=a.replica_core_groups)


def quiet_requests() -> None:
    """No log line per request: KServe's timing trace and uvicorn's access log (KServe has set
    up logging by now; uvicorn leaves it as it is)."""
    import logging

    for name in ("kserve.trace", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
