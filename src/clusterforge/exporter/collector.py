"""One scrape: Slurm's commands run at once, each bounded, their output read into families. No thread, no cache:
each scrape asks Slurm afresh, and scrapes that arrive together take turns, so that two Prometheus servers never
double the load on slurmctld.

A command that fails, overruns the timeout, or prints what cannot be read leaves its own metrics out of the scrape,
says 0 in slurm_exporter_command_ok, and is named on stderr (the journal); the other commands' metrics stay. Nothing
a command does raises out of the collector.
"""

from __future__ import annotations

import functools
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from ..slurm import controller, jobs, nodes, reservations
from ..slurm.commands import TIMED_OUT, Answer
from . import families
from .commands import run_all
from .jobs import FORMAT, parse_squeue
from .records import read as read_records
from .sdiag import figures

# slurmdbd answers: 22.05 has no `sacctmgr ping`; this works on both releases and fails at once (exit 1,
# "Connection refused") while slurmdbd is down.
SACCTMGR_ARGV = ("sacctmgr", "-n", "-P", "show", "cluster", "format=cluster")
COMMANDS = {"sinfo": tuple(nodes.sinfo_argv()), "squeue": tuple(jobs.queue_argv(FORMAT)),
            "sdiag": controller.SDIAG_ARGV, "sacctmgr": SACCTMGR_ARGV, "scontrol": tuple(reservations.show_argv())}
SLURMCTLD_COMMANDS = ("sinfo", "squeue", "sdiag", "scontrol")


@functools.lru_cache(maxsize=1)
def _listing(out: str) -> tuple[nodes.Node, ...]:
    """sinfo's output read once a scrape, though two ask (the nodes' families, and whose records are scraped): at
    10,000 nodes a read is some 80 ms of a 430 ms scrape."""
    return tuple(nodes.parse_sinfo(out))


def _nodes(result: Answer) -> list[Any]:
    found = list(_listing(result.out))
    return families.node_families(found) + families.partition_families(found)


def _jobs(result: Answer) -> list[Any]:
    return families.job_families(parse_squeue(result.out))


def _scheduler(result: Answer) -> list[Any]:
    return families.scheduler_families(figures(result.out))


def _holds(result: Answer) -> list[Any]:
    return families.hold_families(reservations.held(reservations.parse_reservations(result.out)))


READERS: dict[str, Callable[[Answer], list[Any]]] = {"sinfo": _nodes, "squeue": _jobs, "sdiag": _scheduler,
                                                      "sacctmgr": lambda result: [], "scontrol": _holds}


class SlurmCollector:
    """prometheus_client's custom collector: ``collect`` is the scrape."""

    def __init__(self, timeout: float, records: Callable[[], list[Any]] = read_records) -> None:
        self.timeout = timeout
        self.records = records  # the gate's records on this machine (records.py): read, not a Slurm command
        self.failed: list[str] = []  # the commands the last scrape lacked, for --once's exit status
        self._turn = threading.Lock()

    def collect(self) -> list[Any]:
        with self._turn:
            try:
                results = run_all(COMMANDS, self.timeout)
                found, self.failed = read(results, self.timeout)
            except Exception:  # a fault of the exporter's own: an empty scrape, said on stderr, never a 500
                traceback.print_exc(file=sys.stderr)
                self.failed = list(COMMANDS)
                return []
            return found + self._records(listed(results.get("sinfo")))

    def _records(self, nodes: set[str] | None) -> list[Any]:
        """The records' families, of ``nodes`` alone where they are known; files that cannot be read leave them out
        of the scrape, said on stderr and in ``failed`` as ``records``."""
        try:
            kept = self.records()
            return families.record_families(kept if nodes is None else [s for s in kept if s.standing.node in nodes])
        except Exception as error:
            print(f"slurm exporter: the gate's records could not be read: {error}", file=sys.stderr, flush=True)
            self.failed = [*self.failed, "records"]
            return []


def listed(sinfo: Answer | None) -> set[str] | None:
    """The nodes slurmctld lists, None where this scrape could not read them. The records of a node that left the
    cluster are kept on the controller (its history), but a node Slurm no longer has is no series to scrape: at every
    node removed, its tests' series would stay in Prometheus for ever, and an alert on them fire for no node."""
    if sinfo is None or not sinfo.ok:
        return None
    try:
        return {node.name for node in _listing(sinfo.out)}
    except Exception:  # noqa: BLE001 - said by read(), which parses the same output: every record kept
        return None


def read(results: dict[str, Answer], timeout: float | None = None) -> tuple[list[Any], list[str]]:
    """The scrape's families from its commands' results, and the commands whose metrics it lacks. A command that
    overran ``timeout`` is said to on stderr with the bound it overran (the answer's own words do not name it)."""
    found: list[Any] = []
    ok: dict[str, bool] = {}
    for name, result in results.items():
        ok[name] = False
        if not result.ok:
            why = f"gave no answer in {timeout:g} s" if result.rc == TIMED_OUT and timeout else result.why
            print(f"slurm exporter: {' '.join(COMMANDS[name])}: {why}", file=sys.stderr, flush=True)
            continue
        try:
            found += READERS[name](result)
        except Exception:  # output no parser expected: this command's metrics are left out
            print(f"slurm exporter: {name}: its output could not be read:", file=sys.stderr, flush=True)
            traceback.print_exc(file=sys.stderr)
            continue
        ok[name] = True
    up = families.up_families(any(ok.get(name, False) for name in SLURMCTLD_COMMANDS), ok.get("sacctmgr", False))
    return up + found + families.command_families(results, ok), [name for name, good in ok.items() if not good]
