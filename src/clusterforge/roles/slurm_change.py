"""The Slurm files, and what their change asks of the daemons across the cluster, decided once per run.

Each Slurm host keeps a copy of the files its daemons last applied (``/var/lib/clusterforge/applied/slurm/``),
written only at the end of a run in which every action the change asked for has happened. The plan compares those
copies, not the installed files, with the rendered ones (``clusterforge.restarts`` decides, per host), so a run
interrupted after the upload still owes the restart or reconfigure, and the next run does it. A host deployed before
these copies existed is taken to run its installed files.

The cluster's actions are the union of every host's plan: if any host's daemons have not applied the current files,
slurmctld reconfigures (or the release's add-node procedure runs) again, which is harmless where they already have.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import ValidCluster
from ..model.resolve import PYXIS_CONF
from ..model.settings import SLURM_DIR
from ..render import slurm_files as rendered
from ..restarts import Plan, plan
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import DeployRun, Here, step
from ..engine.state import APPLIED_DIR, State


def slurm_file(name: str) -> str:
    return f"{SLURM_DIR}/{name}"


def applied_copy(name: str) -> str:
    """Where a host keeps the Slurm file its daemons last applied (under the records: the state reads them whole)."""
    return f"{APPLIED_DIR}/slurm/{name.replace('/', '--')}"


# What a configless compute node still keeps of the Slurm files: slurmctld serves plugstack.conf, whose Debian
# include names plugstack.conf.d/*.conf by its path, read on the node itself (configless serves no include target).
NODE_LOCAL = frozenset({PYXIS_CONF})
# A configless compute node's record of the files its slurmd last fetched and applied: their digest, not a copy.
FETCHED = "slurm-files-fetched"


def fetches(valid: ValidCluster, groups: tuple[str, ...]) -> bool:
    """Whether this host's Slurm daemons fetch the Slurm files from slurmctld: a compute node of a configless cluster
    that is no controller or login host (those keep the files, for slurmctld and the commands)."""
    return valid.configless and "compute" in groups and not {"controller", "login"} & set(groups)


def fetched(texts: dict[str, str | None]) -> str:
    """The digest a configless node records of the files it fetched (every name, absent ones included)."""
    return ops.digest(*(part for name, text in texts.items() for part in (name, text)))


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """Slurm's files and their directories, with their texts: what the daemons owe is decided from them."""
    names = [f.name for f in valid.slurm_files]
    files = tuple(slurm_file(n) for n in names)
    return Footprint(paths=(SLURM_DIR, *files, *(slurm_file(n.rsplit("/", 1)[0]) for n in names if "/" in n)),
                     texts=files)


@dataclass(frozen=True)
class Change:
    plans: dict[str, Plan] = field(default_factory=dict)  # each Slurm host of the run
    stop_first: bool = False         # Slurm <= 24.05 adds and removes nodes with slurmctld stopped
    restart_slurmctld: bool = False
    reconfigure: bool = False
    restart_every_slurmd: bool = False
    controller_in_run: bool = False  # its actions can happen in this run, so the applied copies may be written

    def restart_slurmd(self, name: str) -> bool:
        found = self.plans.get(name)
        return self.restart_every_slurmd or (found is not None and found.restart_slurmd)

    def reasons(self) -> str:
        return "; ".join(dict.fromkeys(r for p in self.plans.values() for r in p.reasons))


def host_plan(valid: ValidCluster, found: State) -> Plan:
    """What this host's daemons owe: the files they last applied against the rendered ones. A host with no copies
    yet (deployed before they existed) is taken to run its installed files; one with neither is new."""
    records = applied_copy("slurm.conf") in found.texts
    files = {name: (found.texts.get(applied_copy(name) if records else slurm_file(name)), text)
             for name, text in rendered(valid).items()}
    return plan(valid.version, files)


def fetching_plan(valid: ValidCluster, found: State, controller: State | None) -> Plan:
    """What a configless node's slurmd owes. Its record is the digest of the files it last fetched: where that is the
    controller's applied files, it owes what the controller's plan says; a node deployed with local files before
    owes what they say (its slurmd restarts for its new drop-in anyway); a node with neither record is new."""
    new = rendered(valid)
    had = ops.applied(found, FETCHED)
    if had is None:
        return host_plan(valid, found)
    if had == fetched(new):
        return Plan()
    if controller is not None and applied_copy("slurm.conf") in controller.texts:
        before = {name: controller.texts.get(applied_copy(name)) for name in new}
        if fetched(before) == had:
            return plan(valid.version, {name: (before[name], text) for name, text in new.items()})
    why = "slurmd last fetched Slurm files the controller no longer records: it restarts to fetch them again"
    return Plan(restart_slurmd=True, reasons=(why,))


def change(run: DeployRun) -> Change:
    """The cluster's change, from every Slurm host of the run (the same object on every host)."""
    return run.once("slurm change", lambda: _cluster_change(run))


def _cluster_change(run: DeployRun) -> Change:
    valid = run.valid
    slurm_hosts = {m.name for m in valid.machines if m.runs_slurm}
    controller = run.states.get(valid.controller.name)
    groups = {m.name: m.groups for m in valid.machines}
    plans = {name: fetching_plan(valid, found, controller) if fetches(valid, groups[name]) else host_plan(valid, found)
             for name, found in run.states.items() if name in slurm_hosts}
    stop_first = any(p.stop_slurmctld_first for p in plans.values())
    restart_all = any(p.restart_slurmctld and not p.stop_slurmctld_first for p in plans.values())
    restart_ctld = any(p.restart_slurmctld for p in plans.values())
    return Change(plans=plans, stop_first=stop_first, restart_slurmctld=restart_ctld,
                  reconfigure=any(p.reconfigure for p in plans.values()) and not restart_ctld,
                  restart_every_slurmd=stop_first or restart_all, controller_in_run=valid.controller.name in plans)


@step("Slurm files", footprint=footprint, on=("slurm",))
def slurm_files(here: Here) -> None:
    """slurm.conf, gres.conf, cgroup.conf and the topology (topology.yaml from Slurm 25.05, topology.conf before) in
    /etc/slurm, readable by every user (no secrets); a file this cluster does not have is removed, the other
    topology file with it (model/resolve.py decides which one the release reads)."""
    ops.directory(here, name=f"{SLURM_DIR} exists", path=SLURM_DIR)
    local = fetches(here.valid, here.groups)
    for name, text in rendered(here.valid).items():
        if local and name not in NODE_LOCAL:
            continue  # fetched from slurmctld; what an earlier deploy left goes once slurmd fetches (fetched_only)
        if text is not None and "/" in name:
            parent = slurm_file(name.rsplit("/", 1)[0])
            ops.directory(here, name=f"{parent} exists", path=parent)
        if text is None:
            ops.absent(here, name=f"{slurm_file(name)} is absent", path=slurm_file(name))
        else:
            ops.file(here, name=slurm_file(name), path=slurm_file(name), content=text)


@step("Slurm files a configless node does not keep", footprint=footprint, on=("slurm",))
def fetched_only(here: Here) -> None:
    """A configless compute node's local Slurm files, left by a deploy before configless, removed once its slurmd
    runs with --conf-server (the slurmd step): a local slurm.conf would mislead the Slurm commands run there, which
    read it before slurmd's fetched copy, and until then the files serve a slurmd that still reads them."""
    if not fetches(here.valid, here.groups):
        return
    for name in rendered(here.valid):
        if name not in NODE_LOCAL:
            ops.absent(here, name=f"{slurm_file(name)} is absent (slurmd fetches it)", path=slurm_file(name))


@step("Slurm files applied", footprint=footprint, on=("slurm",))
def record_applied(here: Here) -> None:
    """Every Slurm host keeps a copy of the files its daemons now run, once the change's actions have happened; a
    configless compute node, which has no copy to keep, their digest."""
    valid = here.valid
    change_ = change(here.run)
    found = here.state
    if fetches(valid, here.groups):
        digest = fetched(rendered(valid))
        copies = [applied_copy(name) for name in rendered(valid) if applied_copy(name) in found.texts]
        commands = ([ops.record_command(FETCHED, digest)] if ops.applied(found, FETCHED) != digest else []) + [
            f"rm -f {copy}" for copy in copies]
    else:
        stale = [name for name, text in rendered(valid).items() if found.texts.get(applied_copy(name)) != text]
        commands = [f"mkdir -p {APPLIED_DIR}/slurm"] + [
            f"cp {slurm_file(name)} {applied_copy(name)}" if rendered(valid)[name] is not None
            else f"rm -f {applied_copy(name)}" for name in stale] if stale else []
    held = not change_.controller_in_run and (change_.reconfigure or change_.restart_slurmctld)
    ops.commands(here, name="the daemons run the current Slurm files", commands=commands if not held else [],
                 otherwise=f"slurmctld ({valid.controller.name}) is not in this run: the change stays owed" if held
                 else "the daemons run the current Slurm files", shared=True)
