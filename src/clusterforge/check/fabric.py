"""`check --fabric`: the live fabric against the inventory. `ibnetdiscover` runs on one host of the fabric and its
dump is compared by fabric_import/, the code `clusterforge fabric import --inventory` runs, so both say the same
about one fabric. Slurm's side needs nothing here: the `topology` check already holds slurmctld's tree against the
inventory's, and the two together cover the fabric against what Slurm runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..fabric_import import DumpError, import_fabric
from ..fabric_import.build import Imported
from ..fabric_import.report import apart_line
from ..model import Cluster
from ..reach.ssh import Run, Unreachable
from ..words import counted
from .findings import Finding, Outcome, unchecked

CHECK = "fabric"
HAS_DISCOVER = "command -v ibnetdiscover"
# Bounded like every command of check (reach/ssh.py, 60 s): a SuperPOD's discovery takes seconds.
DISCOVER = "ibnetdiscover"
# Compute nodes asked in turn when no host is named: enough to pass a node whose HCA is down, few enough that a
# cluster without infiniband-diags is told so at once.
TRIES = 3


@dataclass(frozen=True, slots=True)
class FabricSource:
    """What --fabric needs: the inventory as written (its fabric entries, compared leaf by leaf) and the host
    --fabric-from names (None: the first compute nodes that answer)."""

    cluster: Cluster
    host: str | None = None


def outcome(host: str, dump: str, cluster: Cluster) -> Outcome:
    """The fabric ``host`` discovered, against the inventory: each difference, miswire and stranger a finding."""
    try:
        found = import_fabric(dump, f"ibnetdiscover on {host}", cluster=cluster)
    except DumpError as error:
        return Outcome(host, CHECK, "", (Finding(str(error)),))
    problems = [Finding(line) for line in _faults(found)]
    seen = found.summary[0] if found.summary else "no compute fabric"
    return Outcome(host, CHECK, seen + ("" if problems else "; as the inventory says"), tuple(problems))


def _faults(found: Imported) -> list[str]:
    """One line each, as `fabric import` lists them after the Fabric; the unnamed HCAs counted, not listed: a fabric
    of vendor descriptions would bury the rest."""
    lines = [f"not a compute node of the inventory: {apart_line(a)}" for a in found.outsiders]
    lines += found.differences + found.cabling + found.miscabled
    if found.unnamed:
        lines.append(f"{counted(len(found.unnamed), 'HCA')} of the compute fabric unnamed (the vendor's "
                     "description): name them with rdma-ndd; `clusterforge fabric import --verbose` lists each")
    return lines


def discover(source: FabricSource, candidates: Sequence[str], runner: Callable[[str], Run],
             fallback: str) -> Outcome:
    """The first of ``candidates`` (hosts that answered) that discovers the fabric, compared; else a row on
    ``fallback`` (the controller's name) that says which hosts were asked and why each could not."""
    asked = list(candidates if source.host is not None else candidates[:TRIES])
    if not asked:
        nobody = (f"--fabric-from {source.host} could not be reached" if source.host is not None
                  else "no compute node answered to run ibnetdiscover")
        return unchecked(fallback, CHECK, nobody)
    why = []
    for host in asked:
        run = runner(host)
        try:
            if run(HAS_DISCOVER).rc != 0:
                why.append(f"{host} has no ibnetdiscover")
                continue
            answer = run(DISCOVER)
        except Unreachable as error:
            why.append(f"{host}: connection lost: {error.cause}")
            continue
        if answer.rc == 0:
            return outcome(host, answer.out, source.cluster)
        why.append(f"`ibnetdiscover` on {host} failed: {answer.why}")
    hint = "" if source.host is not None else "; name a host on the fabric with --fabric-from"
    return unchecked(fallback, CHECK, f"{'; '.join(why)} (infiniband-diags, and an HCA up){hint}")
