"""Automatic repair, where a profile of the inventory has Repair(mode="observe" or "on") (model/repair.py): on the
controller, the loop's program (repair/, shipped as one file, render/programs.py), its launcher, unit and plan
(repair.json), the BMCs' credentials from Vault (one root-only file a node), ipmitool or python3-sushy where a node is
power cycled through IPMI or Redfish, and the service running them (docs/operations/repair.md).

A node the loop no longer power cycles (gone from the inventory, its BMC or its profile's power cycle removed) loses
its credentials file, once the plan that named it is replaced: the nodes whose credentials the deploy left are
recorded on the controller (engine/ops.py's records), since the inventory no longer names them.

Without repair anywhere, the service stops and its files go, the credentials first; its state (the attempts, the
history) stays, as the gate's records do: a site turning repair on again has its nodes' history.
"""

from __future__ import annotations

import shlex

from ..engine import ops
from ..engine.change import Change
from ..engine.footprint import Footprint
from ..engine.run import Here, step
from ..model import ValidCluster
from ..render import programs
from ..render import repair as render
from ..render.health import LIB_DIR
from ..repair import STATE_DIR

PACKAGES = ("python3",)
# What the loop speaks each BMC protocol through (repair/bmc.py).
BMC_PACKAGES = {"ipmi": ("ipmitool",), "redfish": ("python3-sushy",)}
CREDENTIALS_RECORD = "repair-bmc-credentials"  # the nodes whose BMC credentials the controller holds, by name


def _cycled(valid: ValidCluster) -> dict[str, str]:
    """Each node the loop power cycles, with its BMC's Vault secret."""
    repaired = valid.repair
    return {n: b.spec.credentials for n, b in repaired.cycled.items()} if repaired is not None else {}


def _bmc_packages(valid: ValidCluster) -> tuple[str, ...]:
    """What the protocols of the power cycled nodes' BMCs are spoken through."""
    repaired = valid.repair
    spoken = sorted({b.spec.protocol for b in repaired.cycled.values()}) if repaired is not None else []
    return tuple(package for protocol in spoken for package in BMC_PACKAGES[protocol])


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The program, launcher, unit, plan, state and credentials on the controller; the unit read with repair or
    without (it is stopped once repair is off); python3 and, where a node is power cycled, ipmitool or sushy for
    its BMC's protocol."""
    on = valid.repair is not None and "controller" in groups
    return Footprint(paths=(programs.REPAIR, render.LAUNCHER, render.UNIT_PATH, render.PATH, STATE_DIR, render.BMC_DIR,
                            *(render.credentials_file(n) for n in _cycled(valid))),
                     units=(render.UNIT,) if "controller" in groups else (),
                     packages=(*PACKAGES, *_bmc_packages(valid)) if on else (),
                     known=(*PACKAGES, *(p for found in BMC_PACKAGES.values() for p in found)))


@step("automatic repair", footprint=footprint)
def repair(here: Here) -> None:
    if "controller" not in here.groups:
        return
    plan = render.render(here.valid)
    if plan is None:
        _gone(here)
        return
    ops.directory(here, name=f"automatic repair: {LIB_DIR}", path=LIB_DIR)
    program = ops.file(here, name=f"automatic repair: the program, {programs.REPAIR}", path=programs.REPAIR,
                       content=programs.repair_program(), atomic=True)
    launcher = ops.file(here, name=f"automatic repair: {render.LAUNCHER}", path=render.LAUNCHER,
                        content=render.launcher(), mode="0755", atomic=True)
    ops.directory(here, name="automatic repair: /etc/clusterforge", path=render.PATH.rsplit("/", 1)[0])
    cycled = _cycled(here.valid)
    # Root's alone: the loop refuses a credentials file under a directory anyone else may write (repair/bmc.py).
    ops.directory(here, name=f"automatic repair: the BMCs' credentials, {render.BMC_DIR}", path=render.BMC_DIR,
                  mode="0700")
    for node, path in sorted(cycled.items()):
        ops.file(here, name=f"automatic repair: {node}'s BMC credentials from Vault",
                 path=render.credentials_file(node), content=here.run.secrets.bmc_credentials(path), mode="0600")
    # Read by the loop at each pass: a new plan needs no restart.
    ops.file(here, name=f"automatic repair: its plan, {render.PATH}", path=render.PATH, content=plan, atomic=True)
    _stale_credentials_gone(here, sorted(cycled))
    ops.directory(here, name=f"automatic repair: {STATE_DIR}", path=STATE_DIR, mode="0700")
    unit = ops.file(here, name=f"automatic repair's unit {render.UNIT}", path=render.UNIT_PATH,
                    content=render.unit(here.valid))
    ops.systemd_reads(here, "automatic repair's unit", "systemd-clusterforge-repair", [unit])
    ops.service(here, name="automatic repair runs", unit=render.UNIT, inputs=(program, launcher, unit),
                why="its program changed")


def _stale_sweep(cycled: list[str]) -> str:
    """Removes from the credentials' directory every ``<node>.json`` but the cycled nodes': find neither descends
    into nor follows a link, and removes a link itself, never what it points at."""
    kept = "".join(f" ! -name {shlex.quote(f'{node}.json')}" for node in cycled)
    return f"find {render.BMC_DIR} -maxdepth 1 -name '*.json' ! -type d{kept} -delete"


def _stale_credentials_gone(here: Here, cycled: list[str]) -> None:
    """Once the plan that no longer names those nodes is written: until then the loop, which reads its plan at each
    pass, may power cycle them. Acts only where the record differs from the cycled nodes, so a second deploy does
    nothing; a controller with no record yet (deployed before it existed) is swept once."""
    wanted = " ".join(cycled)
    recorded = ops.applied(here.state, CREDENTIALS_RECORD)
    acts = recorded != wanted
    if recorded is None:
        said = [f"{render.BMC_DIR}: the credentials of any node not power cycled removed (no record yet of those "
                "left there)"]
    else:
        said = [f"{render.credentials_file(node)}: removed ({node} is no longer power cycled)"
                for node in sorted(set(recorded.split()) - set(cycled))]
    here.apply(Change("automatic repair: the BMC credentials of nodes no longer power cycled removed",
                      (_stale_sweep(cycled), ops.record_command(CREDENTIALS_RECORD, wanted)) if acts else (),
                      (*said, f"recorded: {len(cycled)} node(s) power cycled, their BMC credentials kept"),
                      otherwise="only the power cycled nodes' BMC credentials are there"))


def _gone(here: Here) -> None:
    """No repair anywhere: the service stopped, its credentials and files removed."""
    ops.stopped(here, name="no automatic repair: its service stopped", unit=render.UNIT)
    ops.tree_absent(here, name=f"no automatic repair: the BMCs' credentials, {render.BMC_DIR}", path=render.BMC_DIR)
    for path in (render.UNIT_PATH, render.LAUNCHER, programs.REPAIR, render.PATH):
        ops.absent(here, name=f"no automatic repair: {path}", path=path)
