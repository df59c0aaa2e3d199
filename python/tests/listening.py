"""The addresses TCP sockets listen on at a port, from the kernel's tables (what ``ss -ltn``
shows); the RPC server's tests and the serving tests (python/serve_tests) read them."""

from __future__ import annotations

import ipaddress
import struct
from typing import List


def listening_on(port: int) -> List[str]:
    """``["127.0.0.1"]``, ``["0.0.0.0", "::"]``, ...: one address per listening socket on ``port``
    (an IPv4-mapped IPv6 address as the IPv4 address)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for fields in (line.split() for line in lines):
            addr, at = fields[1].split(":")
            if fields[3] == "0A" and int(at, 16) == port:  # 0A: LISTEN
                # 32-bit words in the machine's byte order, as the kernel prints them
                words = [int(addr[i:i + 8], 16) for i in range(0, len(addr), 8)]
                ip = ipaddress.ip_address(struct.pack(f"={len(words)}I", *words))
                # gRPC listens on IPv4 through an IPv6 socket: ::ffff:127.0.0.1 is 127.0.0.1
                found.append(str(getattr(ip, "ipv4_mapped", None) or ip))
    return found
