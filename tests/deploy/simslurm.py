"""The simulated controller's Slurm: the one stand-in (tests/slurm_standin) behind every Slurm command the deploy
runs on a simulated host that runs slurmctld, kept in that host's model between commands.

slurmctld knows the nodes and partitions of the controller's /etc/slurm/slurm.conf: the stand-in follows the file
before each command (a node new there is idle, as if its slurmd had registered at once; a node gone from it is gone
with its state). A command that is one Slurm command and nothing for a shell to do is answered in this process; any
other shell text holding one (drains.py's loops, drain_wait's script, the accounting fact's drained nodes) runs in a
real ``sh`` with the stand-in's commands on its PATH, which costs a subprocess: only Slurm's commands pay it.
"""

from __future__ import annotations

import base64
import pickle
import re
import shlex

import hostlist
from slurm_standin import Job, Node, Partition, Runner, Slurm
from slurm_standin.shell import COMMANDS

# A Slurm command anywhere in a shell text, as a word of its own.
_MENTION = re.compile(r"(?<![\w./-])(?:" + "|".join(COMMANDS) + r")(?![\w.-])")
# What the shell would do something with, outside single quotes: a text holding any is not one plain command. (A bare
# hostlist's brackets, gpu[01-04], are a glob that matches no file where the deploy runs: sh passes them on.)
_SHELL = set(";|&<>()$`\\\n*?{}~#")
_SECONDS_RUNNING = 24 * 3600   # a user's job a test puts there runs longer than any deploy


def mentions_slurm(command: str) -> bool:
    return _MENTION.search(command) is not None


def one_command(command: str) -> list[str] | None:
    """The argv of ``command`` where it is one Slurm command and nothing else (no pipe, loop, substitution); None
    for shell text."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or words[0] not in COMMANDS:
        return None
    unquoted = re.sub(r"'[^']*'", "", command)   # what single quotes hold is the command's, not the shell's
    return None if _SHELL & set(unquoted) else words


def reads(argv: list[str]) -> bool:
    """Whether the command only reads slurmctld's state (a fact's or a plan's question, never a change)."""
    return argv[0] in ("sinfo", "squeue") or argv[:2] == ["scontrol", "show"]


def drained_part(command: str) -> str:
    """The accounting fact's last part, the controller's own: its drained nodes, each line tagged ``@drained``
    (engine/facts.py's AccountingState puts it last, a ``{ ...; }`` group of its own)."""
    return command[command.rindex("; {") + 2:]


# --- the stand-in in the host's model ------------------------------------------------------------------------------

def new(release: str) -> Slurm:
    """slurmctld before it read any slurm.conf. The deploy submits no job: one a test puts there runs no script."""
    return Slurm({}, release=release or "24.11", runner=Runner(scripts=False))


def packed(slurm: Slurm) -> str:
    """The stand-in as the host's JSON model keeps it (slurm_standin.shell keeps its state as a pickle too)."""
    return base64.b64encode(pickle.dumps(slurm)).decode()


def unpacked(text: str) -> Slurm:
    return pickle.loads(base64.b64decode(text))


def follow(slurm: Slurm, conf: str) -> None:
    """The nodes and partitions of ``conf`` (slurm.conf), as slurmctld holds them once it read the file: a node it
    holds already keeps its state; a new one is idle, though no slurmd has told slurmctld its start yet
    (SlurmdStartTime=None: its node's simulated slurmd does as it starts, simhost.py); one no longer there is
    dropped."""
    configured: dict[str, Node] = {}
    partitions: dict[str, Partition] = {}
    for line in conf.splitlines():
        values = dict(word.split("=", 1) for word in line.split() if "=" in word)
        if line.startswith("NodeName="):
            for name in hostlist.expand_hostlist(values["NodeName"]):
                configured[name] = slurm.nodes.get(name) or Node(gres=values.get("Gres", ""),
                                                                 cpus=int(values.get("CPUs", 2)), slurmd_start=None)
        elif line.startswith("PartitionName="):
            limit = values.get("MaxTime", "UNLIMITED")
            partitions[values["PartitionName"]] = Partition(
                hostlist.expand_hostlist(values.get("Nodes", "")), default=values.get("Default") == "YES",
                max_minutes=None if limit.upper() in ("UNLIMITED", "INFINITE") else _minutes(limit))
    slurm.nodes, slurm.partitions = configured, partitions


def _minutes(text: str) -> int:
    """slurm.conf's MaxTime: minutes, or [D-]HH:MM:SS (the forms the inventory's max_time renders)."""
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if len(parts) == 1:
        return int(days or 0) * 1440 + parts[0]
    hours, mins, secs = ([0] * (3 - len(parts)) + parts)
    return int(days or 0) * 1440 + hours * 60 + mins + (1 if secs else 0)


# --- what a test says the controller holds -------------------------------------------------------------------------

def drained(slurm: Slurm) -> dict[str, str]:
    """Each node in a drain state (drained or draining) and its reason."""
    return {name: node.reason for name, node in slurm.nodes.items() if "DRAIN" in node.flags}


def running(slurm: Slurm) -> list[str]:
    """The jobs running, as the deploy lists them (squeue's "%i %u %N")."""
    return [f"{job.job_id} {job.user} {hostlist.collect_hostlist(job.nodes)}" for job in slurm.jobs.values()
            if job.state == "RUNNING"]


def hold_jobs(slurm: Slurm, jobs: list[str]) -> None:
    """The jobs running from now on are exactly ``jobs`` ("<id> <user> <nodes>"): one not listed has ended, one
    listed and not yet there is a user's job that started now."""
    wanted = {int(line.split()[0]): line.split() for line in jobs}
    for job in slurm.jobs.values():
        if job.state == "RUNNING" and job.job_id not in wanted:
            job.state, job.ended = "COMPLETED", slurm.now
    for job_id, (_, user, nodes) in wanted.items():
        if job_id not in slurm.jobs:
            slurm.jobs[job_id] = Job(job_id, "train", user, hostlist.expand_hostlist(nodes), state="RUNNING",
                                     submitted=slurm.now, started=slurm.now, ends_at=slurm.now + _SECONDS_RUNNING)
    slurm.next_job = max([slurm.next_job, *(i + 1 for i in slurm.jobs)])


def hold_drained(slurm: Slurm, reasons: dict[str, str]) -> None:
    """The nodes out of service from now on are exactly those of ``reasons``, each drained (by root, now) for its
    reason and nothing else pending (no reboot asked); every other node is in service."""
    for name, node in slurm.nodes.items():
        node.flags -= {"DRAIN", "REBOOT_REQUESTED", "REBOOT_ISSUED"}
        node.next_state, node.reason, node.reason_by = "", "", ""
        if name in reasons:
            assert slurm.run(["scontrol", "update", f"NodeName={name}", "State=DRAIN",
                              f"Reason={reasons[name]}"]).rc == 0
    unknown = set(reasons) - set(slurm.nodes)
    assert not unknown, f"not nodes of the controller's slurm.conf: {sorted(unknown)}"
