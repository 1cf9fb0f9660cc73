"""The node health check on every compute node: the health package as it is in clusterforge (its modules, standard
library only), the launchers slurm.conf names (HealthCheckProgram, Prolog, Epilog), the node's expectations rendered from the
inventory, and a state directory only root reads. Installed before the Slurm files that name it, so slurmd never
runs a HealthCheckProgram that is not there; removed where the inventory has no check (the slurm.conf without it
is applied first, by the same run)."""

from __future__ import annotations

from functools import cache
from importlib import resources

from ..health.expect import EXPECTATIONS_PATH, STATE_DIR
from ..render import health
from . import ops
from .managed import HEALTH_ETC, HEALTH_LIB, HEALTH_MODULES
from .run import Here, step


@cache
def module_text(name: str) -> str:
    return resources.files("clusterforge.health").joinpath(name).read_text(encoding="utf-8")


@step("health")
def health_check(here: Here) -> None:
    expect = health.expectations(here.valid, here.machine)
    if expect is None:
        for path in (*health.LAUNCHERS, EXPECTATIONS_PATH, *(f"{HEALTH_LIB}/{m}" for m in HEALTH_MODULES)):
            ops.absent(here, name=f"no health check: {path}", path=path)
        return
    ops.directory(here, name="health check: its package", path=HEALTH_LIB)
    for module in HEALTH_MODULES:
        ops.file(here, name=f"health check: {module}", path=f"{HEALTH_LIB}/{module}", content=module_text(module))
    launchers = health.launchers(here.valid)
    for path in health.LAUNCHERS:
        if path in launchers:
            ops.file(here, name=f"health check: {path}, which slurmd runs", path=path, content=launchers[path],
                     mode="0755")
        else:
            ops.absent(here, name=f"no job checks: {path}", path=path)
    ops.directory(here, name="health check: /etc/clusterforge", path=HEALTH_ETC)
    ops.file(here, name="health check: what this node should have", path=EXPECTATIONS_PATH,
             content=expect.to_json())
    ops.directory(here, name="health check: its state, root's alone", path=STATE_DIR, mode="0700")
