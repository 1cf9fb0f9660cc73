"""The node health check on every compute node: the health package as it is in clusterforge (its modules, standard
library only), the launchers slurm.conf names (HealthCheckProgram, Prolog, Epilog), the node's expectations rendered from the
inventory, and a state directory only root reads. Installed before the Slurm files that name it, so slurmd never
runs a HealthCheckProgram that is not there; removed where the inventory no longer has them only once the slurm.conf
without them is applied, by the same run (health_check_leftovers, last)."""

from __future__ import annotations

from functools import cache
from importlib import resources

from ..health.expect import EXPECTATIONS_PATH, STATE_DIR
from ..model import ValidCluster
from ..render import health
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import Here, step

# Its package (the modules of clusterforge/health, shipped as they are), the node's expectations, its state.
HEALTH_LIB = f"{health.LIB_DIR}/{health.PACKAGE}"
HEALTH_MODULES = tuple(sorted(f.name for f in resources.files("clusterforge.health").iterdir()
                              if f.name.endswith(".py")))
HEALTH_ETC = EXPECTATIONS_PATH.rsplit("/", 1)[0]


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The program, its launchers, the node's expectations and state (on every host: they go where no check runs);
    python3 on the compute hosts that run it (its standard library; python3-minimal lacks json)."""
    runs = valid.health is not None and "compute" in groups
    return Footprint(paths=(health.LIB_DIR, HEALTH_LIB, *(f"{HEALTH_LIB}/{m}" for m in HEALTH_MODULES),
                            *health.LAUNCHERS, HEALTH_ETC, EXPECTATIONS_PATH, STATE_DIR),
                     shown=(EXPECTATIONS_PATH, *health.LAUNCHERS), packages=("python3",) if runs else (),
                     known=("python3",))


@cache
def module_text(name: str) -> str:
    return resources.files("clusterforge.health").joinpath(name).read_text(encoding="utf-8")


@step("health", footprint=footprint)
def health_check(here: Here) -> None:
    expect = health.expectations(here.valid, here.machine)
    if expect is None:
        return
    ops.directory(here, name="health check: its package", path=HEALTH_LIB)
    for module in HEALTH_MODULES:
        ops.file(here, name=f"health check: {module}", path=f"{HEALTH_LIB}/{module}", content=module_text(module))
    for path, text in health.launchers(here.valid).items():
        ops.file(here, name=f"health check: {path}, which slurmd runs", path=path, content=text, mode="0755")
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
        for path in (EXPECTATIONS_PATH, *(f"{HEALTH_LIB}/{m}" for m in HEALTH_MODULES)):
            ops.absent(here, name=f"no health check: {path}", path=path)
