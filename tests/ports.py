"""A port for a server a test starts: one that nobody listens on, outside the kernel's ephemeral range.

Binding port 0 hands out a port of that range (net.ipv4.ip_local_port_range), the one every outgoing connection
takes its own from. Between the pick and the server's bind, another process's connection could take the port: in CI
the end-to-end tier beside the other tiers makes hundreds of ssh connections, and a real slurmd died on "Unable to
bind listen port (57035): Address already in use". Below the range, only a server binding the same port can.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_LOWEST = 20000   # above the well-known and most registered services' ports


def ephemeral_range() -> tuple[int, int]:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port below the ephemeral range that ``host`` can bind now (and that is closed again on return)."""
    top = ephemeral_range()[0] - 1
    candidates = random.sample(range(_LOWEST, top + 1), k=min(200, top + 1 - _LOWEST))
    for port in candidates:
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_LOWEST}-{top}")
