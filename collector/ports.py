"""Checks of the addresses a process is about to listen on, before anything starts.

Light on purpose (the socket module alone): ``loopsight dashboard`` and ``loopsight up`` use
them too, where the collector's server modules may not be installed.

Example:
    >>> check_distinct_ports({"--http-port": 4318, "--grpc-port": 4318})
    Traceback (most recent call last):
    ...
    loopsight.collector.ports.StartupError: --http-port and --grpc-port are both 4318
"""

from __future__ import annotations

import socket

from loopsight.config import host_port
from loopsight.errors import LoopsightError


class StartupError(LoopsightError):
    """The collector cannot start (port taken, DB locked, ...); the message says why."""


def check_port(host: str, port: int, what: str) -> None:
    """Raise :class:`StartupError` naming ``what`` when ``host:port`` cannot be listened on
    (taken, not this machine's address, or a host name that does not resolve)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except (OSError, UnicodeError) as exc:
            why = getattr(exc, "strerror", None) or exc
            raise StartupError(f"cannot listen on {host_port(host, port)} for {what}: {why}") from None


def check_distinct_ports(ports: dict[str, int]) -> None:
    """Raise :class:`StartupError` when two of the named ports are the same (0, a port left off, is never compared)."""
    seen: dict[int, str] = {}
    for name, port in ports.items():
        if port and port in seen:
            raise StartupError(f"{seen[port]} and {name} are both {port}")
        seen.setdefault(port, name)
