"""The Slurm exporter's command line: serve /metrics (``--listen``), or print one scrape and exit (``--once``)."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, generate_latest, start_http_server

from ..admission.records import ON_CONTROLLER
from ..slurm.commands import bound_s
from .collector import SlurmCollector
from .records import PLAN
from .records import read as read_records

DEFAULT_LISTEN = ":9341"
DEFAULT_TIMEOUT_S = 10.0


def listen_address(text: str) -> tuple[str, int]:
    """``ADDRESS:PORT`` (``:9341`` every IPv4 address, ``[::]:9341`` every IPv6 one) as (address, port)."""
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"not ADDRESS:PORT: {text!r}")
    return host.removeprefix("[").removesuffix("]") or "0.0.0.0", int(port)


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="clusterforge-slurm-exporter",
        description="Slurm's state for Prometheus: each scrape runs sinfo, squeue, sdiag, sacctmgr and "
                    "scontrol show reservation, and reads the admission gate's records.")
    parser.add_argument("--listen", type=listen_address, default=DEFAULT_LISTEN, metavar="ADDRESS:PORT",
                        help=f"where /metrics is served (default {DEFAULT_LISTEN}: every IPv4 address)")
    parser.add_argument("--timeout", type=bound_s, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                        help=f"the most each Slurm command may take; they run at once, so this bounds a scrape "
                             f"(default {DEFAULT_TIMEOUT_S:g}; keep Prometheus's scrape_timeout above it)")
    parser.add_argument("--records", default=ON_CONTROLLER, metavar="DIRECTORY",
                        help=f"the admission gate's records, read at each scrape (default {ON_CONTROLLER})")
    parser.add_argument("--plan", default=PLAN, metavar="FILE",
                        help=f"the admission gate's plan, each node's profile for the median (default {PLAN})")
    parser.add_argument("--once", action="store_true",
                        help="print one scrape in Prometheus's text format and exit: 0 when every command "
                             "answered, 1 when one did not (the text says which)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    collector = SlurmCollector(args.timeout, lambda: read_records(args.records, args.plan))
    # A registry of its own: only the collector, none of the client's process metrics, and nothing run at
    # registration (no describe, and auto_describe off), so no Slurm command runs before the first scrape.
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    if args.once:
        sys.stdout.write(generate_latest(registry).decode())
        return 1 if collector.failed else 0
    address, port = args.listen
    try:
        start_http_server(port, addr=address, registry=registry)  # returns None on 0.16, (server, thread) on 0.21
    except OSError as error:
        print(f"slurm exporter: cannot listen on {address}:{port}: {error.strerror}", file=sys.stderr)
        return 1
    print(f"slurm exporter: serving /metrics on {address}:{port}, commands bounded at {args.timeout:g} s",
          file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, _stop)
    try:
        while True:
            signal.pause()  # the server's threads answer; this one waits for systemd's SIGTERM
    except KeyboardInterrupt:
        return 0


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)
