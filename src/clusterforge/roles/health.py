"""The node health check on every compute node: the program as one file (render/programs.py: clusterforge/health,
standard library only), the launchers slurm.conf names (HealthCheckProgram, Prolog, Epilog), the node's expectations
rendered from the inventory, and a state directory only root reads. Installed before the Slurm files that name it,
so slurmd never runs a HealthCheckProgram that is not there; removed where the inventory no longer has them only
once the slurm.conf without them is applied, by the same run (health_check_leftovers, last).

The program and its launchers are each renamed into place (ops.file(atomic=True)): a Prolog that starts during the
run runs the old program or the new one. The program is written before the launchers that import it, under a new
name whenever its layout changes, and the older files go only once every launcher imports the new one: nodes deployed
when the program was shipped module by module (``/usr/lib/clusterforge/clusterforge_health/``) or as the health
package alone (``clusterforge-health.pyz``) lose those then."""

from __future__ import annotations

from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import Here, step
from ..health.expect import EXPECTATIONS_PATH, STATE_DIR
from ..model import ValidCluster
from ..render import health, programs

HEALTH_ETC = EXPECTATIONS_PATH.rsplit("/", 1)[0]
# Where the program was shipped module by module, before it was one file.
OLD_LIBRARY = f"{health.LIB_DIR}/{health.PACKAGE}"
OLDER = (OLD_LIBRARY, health.OLD_PROGRAM)


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The program, its launchers, the node's expectations and state (on every host: they go where no check runs),
    the old layout's directory; python3 on the compute hosts that run it (its standard library; python3-minimal
    lacks json)."""
    runs = valid.health is not None and "compute" in groups
    return Footprint(paths=(health.LIB_DIR, programs.HEALTH, *OLDER, *health.LAUNCHERS, HEALTH_ETC,
                            EXPECTATIONS_PATH, STATE_DIR),
                     shown=(EXPECTATIONS_PATH, *health.LAUNCHERS), packages=("python3",) if runs else (),
                     known=("python3",))


def _older_programs_gone(here: Here) -> None:
    ops.tree_absent(here, name=f"health check: no module by module copy ({OLD_LIBRARY})", path=OLD_LIBRARY)
    ops.absent(here, name=f"health check: no program of the old layout ({health.OLD_PROGRAM})",
               path=health.OLD_PROGRAM)


@step("health", footprint=footprint)
def health_check(here: Here) -> None:
    expect = health.expectations(here.valid, here.machine)
    if expect is None:
        return
    ops.directory(here, name="health check: its directory", path=health.LIB_DIR)
    ops.file(here, name=f"health check: the program, {programs.HEALTH}", path=programs.HEALTH,
             content=programs.health_program(), atomic=True)
    for path, text in health.launchers(here.valid).items():
        ops.file(here, name=f"health check: {path}, which slurmd runs", path=path, content=text, mode="0755",
                 atomic=True)
    _older_programs_gone(here)
    ops.directory(here, name="health check: /etc/clusterforge", path=HEALTH_ETC)
    ops.file(here, name="health check: what this node should have", path=EXPECTATIONS_PATH,
             content=expect.to_json())
    ops.directory(here, name="health check: its state, root's alone", path=STATE_DIR, mode="0700")


@step("health files no longer named", footprint=footprint)
def health_check_leftovers(here: Here) -> None:
    """What the inventory no longer wants, removed once the daemons run the Slurm files that no longer name it:
    before, a job starting on a node whose slurmd still has the old Prolog would fail it, and Slurm would drain the
    node with a reason of its own."""
    wanted = health.launchers(here.valid) if health.expectations(here.valid, here.machine) else {}
    for path in health.LAUNCHERS:
        if path not in wanted:
            ops.absent(here, name=f"no longer named by slurm.conf: {path}", path=path)
    if not wanted:
        for path in (EXPECTATIONS_PATH, programs.HEALTH):
            ops.absent(here, name=f"no health check: {path}", path=path)
        _older_programs_gone(here)
