"""Replicas on a Ray cluster: each model a Ray Serve deployment of N replicas over the cluster's
nodes, behind the KServe front end of :mod:`.app`.

The front end checks and decodes requests, batches them (:mod:`.batching`) and sends numpy
arrays to the replicas through the deployment's handle (protobuf messages do not cross Ray: they
do not pickle). A replica loads the model from bytes the driver read and shipped with the
deployment (the default: nodes need not share a filesystem) or from the path itself, runs one
batch at a time and says who it is in ``served_by`` (node address/pid). Ray Serve restarts a
replica that dies; a request that was on it is sent once more to another replica, else it gets
a 503 naming the failure.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Dict, Optional, Tuple

import ray
import ray.serve.exceptions
from ray import serve

from .protocol import ReplicaFailed


def model_files(path: str) -> Dict[str, bytes]:
    """The files of a model by base name: the library, or a manifest and the libraries it
    lists (the manifest rewritten to name them by base name)."""
    with open(path, "rb") as f:
        data = f.read()
    if not path.endswith(".buckets"):
        return {os.path.basename(path): data}
    files, lines = {}, []
    base = os.path.dirname(os.path.abspath(path))
    for line in data.decode().splitlines():
        item = line.strip()
        if not item or item.startswith("#"):
            lines.append(line)
            continue
        lib = item if os.path.isabs(item) else os.path.join(base, item)
        with open(lib, "rb") as f:
            files[os.path.basename(lib)] = f.read()
        lines.append(os.path.basename(lib))
    files[os.path.basename(path)] = "\n".join(lines).encode() + b"\n"
    return files


# A replica gone with the request on it (its process died, its node left): worth one more try
# on another; an error the model raised (RayTaskError) is not.
LOST = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
        ray.serve.exceptions.ReplicaUnavailableError)


class Replica:
    """One replica: the model loaded in a Ray worker process (pinned to one of its node's
    ``core_groups`` core groups when given: :mod:`.pinning`)."""

    def __init__(self, path: str, files: Optional[Dict[str, bytes]], pipeline: Optional[str],
                 core_groups: Optional[int] = None) -> None:
        from . import runners

        self.group = None
        if core_groups:
            from .pinning import CoreGroup

            key = f"{ray.get_runtime_context().get_node_id()}-{serve.get_replica_context().deployment}"
            self.group = CoreGroup.claim(key, core_groups)
            self.group.pin()
            print(f"tvmrt.serve: replica {os.getpid()} pinned to {self.group}", file=sys.stderr)

        if files is not None:
            self.dir = tempfile.TemporaryDirectory(prefix="tvmrt-replica-")
            for name, data in files.items():
                with open(os.path.join(self.dir.name, name), "wb") as f:
                    f.write(data)
            path = os.path.join(self.dir.name, os.path.basename(path))
        self.runner = runners.load(path, pipeline)
        self.served_by = f"{ray.util.get_node_ip_address()}/{os.getpid()}"

    def describe(self) -> Tuple[list, list, int]:
        return self.runner.inputs, self.runner.outputs, self.runner.max_rows

    def run(self, arrays):
        return self.runner.run(arrays), self.served_by


class RayReplicas:
    """A model's backend for :class:`.model.RuntimeModel`: ``replicas`` replicas, two batches in
    flight for each (one running, the next already there when it ends)."""

    def __init__(self, name: str, path: str, replicas: int, cpus: float, max_per_node: Optional[int],
                 ship: bool, pipeline: Optional[str] = None, core_groups: Optional[int] = None) -> None:
        options = {"num_replicas": replicas, "ray_actor_options": {"num_cpus": cpus},
                   # one batch running and one ready behind it (Ray Serve's default of 5 would
                   # queue work on a busy replica while another idles)
                   "max_ongoing_requests": 2}
        if max_per_node:
            options["max_replicas_per_node"] = max_per_node
        app = serve.deployment(Replica, name=name).options(**options).bind(path, model_files(path) if ship else None, pipeline, core_groups)
        self.handle = serve.run(app, name=name, route_prefix=None)
        self.inputs, self.outputs, self.max_rows = self.handle.describe.remote().result()
        self.workers = 2 * replicas

    async def run(self, arrays):
        for attempt in (1, 2):
            try:
                return await self.handle.run.remote(arrays)
            except LOST as e:
                if attempt == 2:
                    raise ReplicaFailed(f"the replica running the request failed twice: {type(e).__name__}: {e}") from None


# What the replicas' processes need of the driver's environment: where the runtime is.
PASSED_ON = ("PYTHONPATH", "TVM_RUNTIME_LIBRARY", "TVM_NUM_THREADS")


def connect(address: Optional[str]) -> None:
    """Join the cluster at ``address`` (``auto``: the one started on this machine), or start a
    local one; start Ray Serve without its HTTP proxies (KServe is the front end)."""
    ray.init(address=address, namespace="tvmrt", log_to_driver=False,
             runtime_env={"env_vars": {k: v for k, v in os.environ.items() if k in PASSED_ON}})
    serve.start(proxy_location="Disabled")


def release(names) -> None:
    """Remove the models' deployments from the cluster (their replicas outlive this process
    otherwise: Ray Serve's controller keeps them)."""
    for name in names:
        try:
            serve.delete(name)
        except Exception as e:  # noqa: BLE001 - shutting down: say it and go on
            print(f"tvmrt.serve: could not remove the deployment of {name}: {e}", file=sys.stderr)
