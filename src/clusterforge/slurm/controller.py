"""What slurmctld is asked besides its nodes (nodes.py), jobs (jobs.py), drains (drains.py) and holds
(reservations.py): whether it answers, its reconfiguration, its release, a hostlist's names, its partitions, its
topology, the users it holds, its scheduler's statistics. Pure: the commands; their readers stay with the callers
(check/slurm_parse.py, accounts/controller.py, exporter/sdiag.py), which read nothing else.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

PING = "scontrol ping"                 # "Slurmctld(primary) at ctl is UP"; DOWN where it does not answer
RECONFIGURE = "scontrol reconfigure"   # every daemon reads its files again (from 23.11: new slurmctld and slurmd)
SHOW_PARTITIONS = "scontrol show partition -o"
SHOW_TOPOLOGY = "scontrol show topology"
SDIAG_ARGV = ("sdiag",)                # the scheduler's statistics
# The release slurmctld runs, as its config says (SLURM_VERSION), bounded: nothing where it does not answer.
VERSION_COMMAND = "timeout -k 2 10 scontrol show config 2>/dev/null | sed -n 's/^SLURM_VERSION *= *//p'"


def hostnames_command(hostlist: str) -> str:
    """A Slurm hostlist's node names, one a line, as Slurm expands it."""
    return shlex.join(["scontrol", "show", "hostnames", hostlist])


def users_command(names: Iterable[str]) -> str:
    """What slurmctld holds of the users ``names`` (uid, default account): ``scontrol show assoc_mgr``."""
    return shlex.join(["scontrol", "show", "assoc_mgr", "flags=users", f"users={','.join(names)}"])
