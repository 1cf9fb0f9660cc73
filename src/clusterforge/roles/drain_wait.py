"""Draining nodes from the controller before a run changes anything, and waiting (bounded) until no job runs there:
what the removal of nodes and the move of a GPU driver share. Nodes already drained or down keep their state and
reason (drains.drain_command)."""

from __future__ import annotations

import shlex

from ..errors import DeployError, for_pyinfra
from ..engine import remote
from ..engine.run import RemoteHost
from ..slurm import drains, jobs, nodes

POLL_S = 5


def node_states(controller: RemoteHost, names: str) -> dict[str, nodes.Node]:
    """The nodes of the hostlist ``names`` as sinfo lists them now: state and reason."""
    ok, output = remote.run(controller, nodes.sinfo_command(names), _timeout=60)
    if not ok:
        raise for_pyinfra(DeployError(f"could not read the state of {names} on the controller: "
                                      f"{output.stderr.strip()[-300:]}"))
    return {n.name: n for n in nodes.parse_sinfo(output.stdout)}


def jobs_on(controller: RemoteHost, names: str) -> list[str]:
    """The jobs on the nodes of the hostlist ``names`` now (for a plan), as "job user nodes"."""
    ok, output = remote.run(controller, jobs.on_nodes_command(names), _timeout=60)
    return sorted(set(output.stdout.splitlines())) if ok else []


def drain_and_wait(controller: RemoteHost, groups: list[tuple[str, drains.Drain]], names: str, wait: int
                   ) -> tuple[bool, list[str], str]:
    """Drain each hostlist of ``groups`` with its reason, then wait up to ``wait`` seconds until no job runs on
    ``names`` (all of them). (ok, the jobs still running, stderr)."""
    script = "; ".join(drains.drain_command(group, drain) for group, drain in groups) + (
        f"; end=$(( $(date +%s) + {wait} )); "
        f"while jobs=$({jobs.on_nodes_command(names)} | sort -u); "
        f"[ -n \"$jobs\" ] && [ $(date +%s) -lt $end ]; do sleep {POLL_S}; done; echo \"$jobs\"")
    ok, output = remote.run(controller, f"sh -c {shlex.quote(script)}", _timeout=wait + 120)
    return ok, [line for line in output.stdout.splitlines() if line.strip()], output.stderr.strip()


def jobs_still_run(drained: str, jobs: list[str], wait: int) -> str:
    """Why a run stops before it changes anything: ``drained`` (the nodes, drained and why) still run ``jobs``."""
    waited = f"after waiting {wait} s, " if wait else ""
    longer = f"wait longer than {wait} s" if wait else "have the deploy wait for them"
    return (f"{drained}, but {waited}jobs still run there: {'; '.join(jobs)} (job user nodes). Nothing was changed "
            f"on any host; no job was killed. Run the deploy again once they end, or {longer}: "
            "--data drain_wait=SECONDS")
