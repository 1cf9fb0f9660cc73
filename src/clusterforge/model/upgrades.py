"""Slurm's rules for a change of the releases a cluster's hosts run, over the whole cluster at once: each host moves
at most one window (versions.upgrade_problem), and in the releases the hosts run afterwards no daemon is ahead of
one that serves it, or further behind it than that window (slurmdbd serves slurmctld; slurmctld serves the nodes'
slurmd and the commands on every host). Slurm's order follows from it: slurmdbd first, then slurmctld, then the
nodes and the login hosts (slurm-24-11-6-1 doc/html/upgrades.shtml, "Upgrade order").
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import hostlists
from ..versions import SlurmVersion, upgrade_problem, upgrades_from
from .resolved import ValidCluster

# Who serves whom, by host group: what runs there, and the groups whose daemons or commands talk to it.
SERVES: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("database", "slurmdbd", (("controller", "slurmctld"),)),
    ("controller", "slurmctld", (("compute", "slurmd"), ("login", "Slurm's commands"))),
)


def upgrade_problems(valid: ValidCluster, before: Mapping[str, SlurmVersion],
                     after: Mapping[str, SlurmVersion]) -> list[str]:
    """Why moving the hosts from the releases ``before`` to those ``after`` (host name -> release; a host absent from
    ``before`` has no Slurm yet, one absent from ``after`` keeps its own) breaks Slurm's rules; [] where it does not.
    Each problem names the hosts, as a hostlist."""
    version = valid.version
    running = {**before, **after}
    problems = []
    jumps: dict[str, list[str]] = {}
    for host, new in after.items():
        old = before.get(host)
        if old is not None and old != new and (why := upgrade_problem(old, new)) is not None:
            jumps.setdefault(why, []).append(host)
    problems += [f"{hostlists.compress(sorted(hosts, key=hostlists.natural_key), version)}: {why}"
                 for why, hosts in jumps.items()]
    groups = {m.name: set(m.groups) for m in valid.machines}
    for server_group, server, clients in SERVES:
        for host in sorted((h for h, g in groups.items() if server_group in g and h in running),
                           key=hostlists.natural_key):
            release = running[host]
            for client_group, client in clients:
                ahead: dict[SlurmVersion, list[str]] = {}
                behind: dict[SlurmVersion, list[str]] = {}
                for other in sorted((o for o, g in groups.items() if client_group in g and o in running and o != host),
                                    key=hostlists.natural_key):
                    theirs = running[other]
                    if theirs > release:
                        ahead.setdefault(theirs, []).append(other)
                    elif theirs < release and theirs not in upgrades_from(release):
                        behind.setdefault(theirs, []).append(other)
                problems += [
                    f"{hostlists.compress(hosts, version)}: {client} would run {theirs}, ahead of {server} {release} "
                    f"on {host}, which refuses a newer release: Slurm's order is slurmdbd, then slurmctld, then the "
                    "nodes and the login hosts" for theirs, hosts in sorted(ahead.items())]
                problems += [
                    f"{hostlists.compress(hosts, version)}: {client} would run {theirs}, too far behind {server} "
                    f"{release} on {host}, which talks to {', '.join(str(r) for r in upgrades_from(release))} and "
                    f"{release} only" for theirs, hosts in sorted(behind.items())]
    return problems
