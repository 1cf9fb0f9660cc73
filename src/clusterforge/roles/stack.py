"""The pinned stack on each host: apt's preferences and NVIDIA's repository before any package is installed, the
profile's GPU stack at exactly its versions (installed in the host's one apt transaction, roles/packages.py) with its
daemons running, every package of the stack and Slurm's held once installed (and released when the inventory no
longer holds it), unattended-upgrades told to leave them, and NCCL's settings for the profile's jobs.

A GPU stack whose driver moves on a node that still runs jobs is never installed under them: the run drains the
node first and stops while jobs run (roles/driver_move.py). Such a node's GPU daemons are not restarted by the run:
under the old kernel module a newer fabric manager refuses to start, and slurmd, which requires it, would stop with
it, leaving Slurm no daemon to ask for the reboot; the reboot at the end of the run starts them. Slurm's packages
are pinned and held, not moved: a host whose Slurm is another version than the inventory's stops the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import ValidCluster
from ..model.containers import AptRepository
from ..model.hosts import SLURM_GROUPS
from ..model.stack import DCGM_EXPORTER_UNIT, Part, parts
from ..render import stack as render
from ..render.text import HEADER
from . import artifacts
from ..engine import ops
from ..engine.change import Change
from .driver_move import driver_moves
from ..engine.footprint import Footprint
from ..engine.run import Here, step

ARMOR = b"-----BEGIN PGP PUBLIC KEY BLOCK-----"
# What apt keeps, what unattended-upgrades leaves, NVIDIA's repository (its key armored or not: apt reads a
# signed-by file by its extension), NCCL's settings; the packages clusterforge held, as a record.
PREFERENCES = "/etc/apt/preferences.d/clusterforge"
UNATTENDED = "/etc/apt/apt.conf.d/51clusterforge-held"
STACK_SOURCES = "/etc/apt/sources.list.d/clusterforge-nvidia.list"
STACK_KEYRINGS = {False: "/usr/share/keyrings/clusterforge-nvidia.gpg", True: "/usr/share/keyrings/clusterforge-nvidia.asc"}
NCCL_CONF = "/etc/nccl.conf"
ENROOT_ENVIRON_DIR = "/etc/enroot/environ.d"
NCCL_ENVIRON = f"{ENROOT_ENVIRON_DIR}/50-clusterforge-nccl.env"
DCGM_EXPORTER_DROPIN = render.DCGM_EXPORTER_DROPIN
HELD_RECORD = "held-packages"


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """apt's pins and NVIDIA's repository, NCCL's settings (/etc/nccl.conf always: one clusterforge did not write is
    never removed), the DCGM exporter's drop-in; every package of every GPU stack and of Slurm, and the version
    Slurm is pinned at where the host runs it; the GPU daemons on compute hosts (a host's profile is not known here,
    only its groups)."""
    stacks = valid.stack.gpu.values() if valid.stack is not None else ()
    gpu = tuple(dict.fromkeys(p for stack in stacks for part in parts(stack) for p in part.packages))
    units = tuple(dict.fromkeys(part.unit for stack in stacks for part in parts(stack) if part.unit)
                  ) if "compute" in groups else ()
    pinned = valid.stack.slurm if valid.stack is not None and SLURM_GROUPS & set(groups) else None
    return Footprint(paths=(PREFERENCES, UNATTENDED, STACK_SOURCES, *STACK_KEYRINGS.values(), NCCL_CONF,
                            ENROOT_ENVIRON_DIR, NCCL_ENVIRON, render.DCGM_EXPORTER_DROPIN_DIR, DCGM_EXPORTER_DROPIN),
                     texts=(NCCL_CONF,), shown=(PREFERENCES, UNATTENDED, STACK_SOURCES, NCCL_ENVIRON,
                                                DCGM_EXPORTER_DROPIN),
                     units=units, known=(*render.SLURM_PACKAGES, *gpu), slurm=pinned or "")


def held(here: Here) -> list[str]:
    """The packages this host holds: its GPU stack's, and Slurm's it has (with a stack in the inventory)."""
    valid = here.valid
    if valid.stack is None:
        return []
    slurm = [p for p in here.footprint.packages if p in render.SLURM_HELD]
    return sorted({*slurm, *(p for part in render.gpu_parts(valid, here.machine) for p in part.packages)})


def moving(here: Here) -> list[tuple[str, str]]:
    """(package, version) of the host's GPU stack that this run installs or moves."""
    have = here.state.packages
    return [(p, part.version) for part in render.gpu_parts(here.valid, here.machine) for p in part.packages
            if have.get(p) != part.version]


def slurm_moves(here: Here) -> list[tuple[str, str]]:
    """(package, version) of Slurm's packages on this host that move to the version the inventory pins
    (stack.slurm): a patch release, or a release Slurm's rules allow (roles/packages.py guards that). They move in
    the host's one apt transaction, and each Slurm daemon is restarted in Slurm's order (roles/daemons.py)."""
    wanted = here.valid.stack.slurm if here.valid.stack is not None else None
    if wanted is None:
        return []
    return [(name, wanted) for name, version in sorted(here.state.packages.items())
            if name in render.SLURM_PACKAGES and version != wanted]


def new_release(here: Here) -> bool:
    """Slurm's packages on this host move to another release in this run."""
    moving = slurm_moves(here)
    return bool(moving) and any(here.state.packages[name].split(".")[:2] != version.split(".")[:2]
                                for name, version in moving)


@dataclass(frozen=True, slots=True)
class PinnedInstall:
    """What the pinned stack adds to the host's apt transaction, Slurm's packages that move and the GPU stack:
    exact versions, whether the package lists must be fetched first (a repository or pin new in this run), what the
    plan says, and what is recorded with the install."""

    packages: tuple[str, ...] = ()   # name=version
    refresh: bool = False
    said: tuple[str, ...] = ()
    recorded: tuple[str, ...] = ()   # commands run once the install succeeded


def _repository(here: Here) -> AptRepository | None:
    valid = here.valid
    return valid.stack.repository if valid.stack is not None and render.gpu_parts(valid, here.machine) else None


def _sources(here: Here) -> tuple[str, bytes, str] | None:
    """NVIDIA's repository as this host gets it: its key's path and bytes, and the sources file."""
    repository = _repository(here)
    if repository is None:
        return None
    key = artifacts.content(here.run, repository.key)
    keyring = STACK_KEYRINGS[key.lstrip().startswith(ARMOR)]
    return keyring, key, render.nvidia_sources(here.valid, keyring)


def _rebooting(here: Here) -> bool:
    return bool(moving(here)) and here.machine.name in driver_moves(here.valid, here.run.states)


def pinned_install(here: Here) -> PinnedInstall:
    """The pinned stack's part of this host's one apt transaction (roles/packages.py): Slurm's packages that move,
    and the GPU stack."""
    wanted = slurm_moves(here) + moving(here)
    if not wanted:
        return PinnedInstall()
    have = here.state.packages
    said = tuple(f"{p}: {have[p]} -> {v}" if p in have else f"{p}: {v} installed" for p, v in wanted)
    daemons = [part for part in render.gpu_parts(here.valid, here.machine) if part.unit is not None]
    # Recorded with the install: a run interrupted after it owes these daemons the reboot, not a restart.
    recorded = (tuple(ops.record_command(part.unit, _inputs(here, part)) for part in daemons) if _rebooting(here)
                else ())
    if recorded:
        units = ", ".join(p.unit for p in daemons)
        said += (f"{units}: started by the reboot into the new driver, not restarted under the old kernel module",)
    # The package lists are fetched first, whatever their age: an exact version is often one a repository has only
    # just published, or one a source or pin of this run (or of an earlier run, interrupted) brings in.
    return PinnedInstall(tuple(f"{p}={v}" for p, v in wanted), True, said, recorded)


@step("stack", footprint=footprint)
def stack(here: Here) -> None:
    """Before any package is installed: apt's pins, unattended-upgrades told, NVIDIA's repository."""
    valid, machine = here.valid, here.machine
    preferences = render.preferences(valid, machine)
    if preferences is not None:
        ops.file(here, name="apt keeps the pinned versions", path=PREFERENCES, content=preferences)
    else:
        ops.absent(here, name="apt keeps no pinned version", path=PREFERENCES)
    names = held(here)
    if names:
        ops.file(here, name="unattended-upgrades leaves the held packages", path=UNATTENDED,
                 content=render.unattended_upgrades(valid, names))
    else:
        ops.absent(here, name="unattended-upgrades: nothing held", path=UNATTENDED)
    sources = _sources(here)
    if sources is not None:
        keyring, key, text = sources
        ops.file(here, name="NVIDIA's repository key (sha256 checked)", path=keyring, content=key)
        other = next(path for path in STACK_KEYRINGS.values() if path != keyring)
        ops.absent(here, name="NVIDIA's repository key, one form", path=other)
        ops.file(here, name="NVIDIA's repository", path=STACK_SOURCES, content=text)
    else:
        for path in (STACK_SOURCES, *STACK_KEYRINGS.values()):
            ops.absent(here, name=f"no NVIDIA repository: {path}", path=path)


def _exporter_dropin(here: Here) -> str | None:
    return render.dcgm_exporter_dropin(here.valid, render.gpu_stack(here.valid, here.machine))


def _inputs(here: Here, part: Part) -> str:
    """What a GPU daemon runs with: its version, and the exporter its drop-in too."""
    if part.unit == DCGM_EXPORTER_UNIT:
        return f"{part.version} {ops.digest(_exporter_dropin(here))}"
    return part.version


def _exporter(here: Here) -> bool:
    """The DCGM exporter's drop-in where the node's stack has the exporter, read by systemd; where it no longer
    has one, the exporter clusterforge ran stopped and disabled and its drop-in removed (its package stays, no
    longer held, as any part the inventory drops). Whether the drop-in changes in this run."""
    dropin = _exporter_dropin(here)
    if dropin is None:
        ops.dropin_gone(here, "nvidia-dcgm-exporter", DCGM_EXPORTER_UNIT, DCGM_EXPORTER_DROPIN)
        return False
    return ops.dropin(here, "nvidia-dcgm-exporter", DCGM_EXPORTER_DROPIN, dropin,
                      "the DCGM exporter reads nvidia-dcgm's host engine").writes


@step("stack daemons", footprint=footprint)
def stack_daemons(here: Here) -> None:
    """Once the packages are in: the GPU stack's daemons run their pinned versions, restarted where one moved
    (not on a node that reboots into a new driver: the reboot starts them); the DCGM exporter also where its
    drop-in changed."""
    gpu = render.gpu_parts(here.valid, here.machine)
    rebooting = _rebooting(here)
    moved = {p for p, _ in moving(here)}
    new_dropin = _exporter(here)
    for part in (p for p in gpu if p.unit is not None):
        package_moved = bool(moved & set(part.packages))
        dropin_changed = part.unit == DCGM_EXPORTER_UNIT and new_dropin
        why = "its drop-in changed" if dropin_changed and not package_moved else f"{part.name} {part.version}"
        ops.service(here, name=f"{part.name} runs", unit=part.unit, value=_inputs(here, part),
                    changing=package_moved or dropin_changed, why=why, rebooting=rebooting)


@step("stack held", footprint=footprint)
def stack_held(here: Here) -> None:
    """Once every package is installed: the stack's packages held, and those clusterforge held before and the
    inventory no longer pins released (an admin's own holds are left alone). A package this run moved is held
    again: apt drops the hold of a package it changes (--allow-change-held-packages)."""
    names = held(here)
    before = (ops.applied(here.state, HELD_RECORD) or "").split()
    moved = {p for p, _ in moving(here) + slurm_moves(here)}
    hold = [n for n in names if n not in here.state.held or n in moved]
    release = [n for n in before if n not in names and n in here.state.held]
    commands = ([f"apt-mark hold {' '.join(hold)}"] if hold else []) + \
               ([f"apt-mark unhold {' '.join(release)}"] if release else [])
    if commands or sorted(before) != names:
        commands.append(ops.record_command(HELD_RECORD, " ".join(names)))
    said = (*(f"held: {n}" for n in hold), *(f"no longer held: {n}" for n in release))
    here.apply(Change("Slurm's and the GPU stack's packages are held", tuple(commands), said,
                      otherwise="the pinned packages are held" if names else "nothing held"))


@step("nccl", footprint=footprint)
def nccl(here: Here) -> None:
    """NCCL's settings on the profile's nodes, and in its containers where Enroot runs."""
    valid, node = here.valid, here.machine.node
    settings = node.profile.nccl if node is not None else None
    if settings is not None:
        ops.file(here, name="NCCL's settings", path=NCCL_CONF, content=render.nccl_conf(valid, settings))
    elif here.state.texts.get(NCCL_CONF, "").startswith(HEADER):
        ops.absent(here, name="no NCCL settings of clusterforge's", path=NCCL_CONF)
    if settings is not None and valid.containers is not None:
        ops.directory(here, name="Enroot's environment directory", path=ENROOT_ENVIRON_DIR)
        ops.file(here, name="NCCL's settings in containers", path=NCCL_ENVIRON,
                 content=render.nccl_environ(valid, settings))
    else:
        ops.absent(here, name="no NCCL settings in containers", path=NCCL_ENVIRON)

