"""Automatic repair, where a profile of the inventory has Repair(mode="observe" or "on") (model/repair.py): on the
controller, the loop's program (repair/, shipped as one file, render/programs.py), its launcher, unit and plan
(repair.json), the BMCs' credentials from Vault (one root-only file a node), ipmitool where a node is power cycled, and
the service running them (docs/operations/repair.md).

Without repair anywhere, the service stops and its files go, the credentials first; its state (the attempts, the
history) stays, as the gate's records do: a site turning repair on again has its nodes' history.
"""

from __future__ import annotations

from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import Here, step
from ..model import ValidCluster
from ..render import programs
from ..render import repair as render
from ..render.health import LIB_DIR
from ..repair import STATE_DIR

PACKAGES = ("python3",)
BMC_PACKAGES = ("ipmitool",)


def _cycled(valid: ValidCluster) -> dict[str, str]:
    """Each node the loop power cycles, with its BMC's Vault secret."""
    repaired = valid.repair
    return {n: b.spec.credentials for n, b in repaired.cycled.items()} if repaired is not None else {}


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The program, launcher, unit, plan, state and credentials on the controller; the unit read with repair or
    without (it is stopped once repair is off); python3 and, where a node is power cycled, ipmitool."""
    on = valid.repair is not None and "controller" in groups
    return Footprint(paths=(programs.REPAIR, render.LAUNCHER, render.UNIT_PATH, render.PATH, STATE_DIR, render.BMC_DIR,
                            *(render.credentials_file(n) for n in _cycled(valid))),
                     units=(render.UNIT,) if "controller" in groups else (),
                     packages=(*PACKAGES, *(BMC_PACKAGES if _cycled(valid) else ())) if on else (),
                     known=(*PACKAGES, *BMC_PACKAGES))


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
    ops.directory(here, name=f"automatic repair: {STATE_DIR}", path=STATE_DIR, mode="0700")
    unit = ops.file(here, name=f"automatic repair's unit {render.UNIT}", path=render.UNIT_PATH,
                    content=render.unit(here.valid))
    ops.systemd_reads(here, "automatic repair's unit", "systemd-clusterforge-repair", [unit])
    ops.service(here, name="automatic repair runs", unit=render.UNIT, inputs=(program, launcher, unit),
                why="its program changed")


def _gone(here: Here) -> None:
    """No repair anywhere: the service stopped, its credentials and files removed."""
    ops.stopped(here, name="no automatic repair: its service stopped", unit=render.UNIT)
    ops.tree_absent(here, name=f"no automatic repair: the BMCs' credentials, {render.BMC_DIR}", path=render.BMC_DIR)
    for path in (render.UNIT_PATH, render.LAUNCHER, programs.REPAIR, render.PATH):
        ops.absent(here, name=f"no automatic repair: {path}", path=path)
