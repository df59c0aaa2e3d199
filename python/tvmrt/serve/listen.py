"""The address KServe's servers listen on (``--host``, for HTTP and gRPC alike).

KServe 0.21's ``ModelServer`` has no option for it: its HTTP server (``RESTServer``) gives uvicorn
the host ``0.0.0.0`` and its gRPC server (``GRPCServer``) listens on ``[::]:PORT``, every
interface. ``ModelServer.start`` builds both from the names in ``kserve.model_server``;
:func:`install` puts subclasses that listen on the given host in their place.
"""

from __future__ import annotations

import logging


def install(host: str) -> None:
    """Make the HTTP and gRPC servers ``ModelServer.start`` builds listen on ``host``."""
    from kserve import model_server

    model_server.RESTServer = rest_server(model_server.RESTServer, host)
    model_server.GRPCServer = grpc_server(model_server.GRPCServer, host)


def rest_server(base, host: str):
    class RESTServer(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.config.host = host  # uvicorn's Config, read when the server binds

    return RESTServer


class _TrueAddress(logging.Filter):
    """KServe logs ``Starting gRPC server on [::]:PORT`` after adding that address: on the
    ``kserve`` logger, that one record is made to name the address the port was added on."""

    def __init__(self) -> None:
        super().__init__()
        self.bound: dict = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == "Starting gRPC server on %s" and record.args and record.args[0] in self.bound:
            record.args = (self.bound[record.args[0]],)
        return True


def grpc_server(base, host: str):
    address = f"[{host}]" if ":" in host and not host.startswith("[") else host
    true_address = _TrueAddress()
    logging.getLogger("kserve").addFilter(true_address)

    class GRPCServer(base):
        """KServe's ``start`` makes a ``grpc.aio`` server, keeps it as ``self._server`` and adds
        its ``[::]:PORT`` to it: the server is caught as it is kept, and the port added on
        ``host`` instead."""

        @property
        def _server(self):
            return self.__dict__.get("_grpc")

        @_server.setter
        def _server(self, server):
            if server is not None:
                add = server.add_insecure_port

                def add_on_host(listen: str) -> int:
                    on_host = f"{address}:{listen.rpartition(':')[2]}"
                    true_address.bound[listen] = on_host
                    return add(on_host)

                server.add_insecure_port = add_on_host
            self.__dict__["_grpc"] = server

    return GRPCServer
