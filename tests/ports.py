"""Free loopback ports for the servers tests start."""

from __future__ import annotations

import socket

_GIVEN: set[int] = set()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now, and never one this process was given before: the
    kernel may hand a released port out again at once, and two servers a test starts without
    waiting (a collector's HTTP and another's gRPC port) then collided."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _GIVEN:
            break
    _GIVEN.add(port)
    return port
