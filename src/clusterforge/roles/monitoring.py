"""Monitoring, where the inventory has it (model/monitoring.py): node exporter on every host (the health check
writes its metrics into its textfile directory), the Slurm exporter on the controller (exporter/, shipped as one
file, render/programs.py, run by its own unit as nobody), Prometheus and Alertmanager on the monitoring host with the files rendered from the
inventory (render/monitoring.py). Each daemon restarts when its files change, and a restart owed stays owed until
it has happened (the record of what it runs, engine/ops.py)."""

from __future__ import annotations

from ..exporter import PACKAGE as EXPORTER_PACKAGE
from ..model import ValidCluster
from ..model.settings import (
    ALERTMANAGER_CONFIG,
    ALERTMANAGER_DEFAULTS,
    ALERTMANAGER_PORT,
    NODE_EXPORTER_PORT,
    PROMETHEUS_CONFIG,
    PROMETHEUS_DEFAULTS,
    PROMETHEUS_PORT,
    PROMETHEUS_RULES,
    SLURM_EXPORTER_PORT,
    TEXTFILE_DIR,
)
from ..render import monitoring, programs, slurm_exporter
from ..render.health import LIB_DIR
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import Here, step
from ..engine.waits import until

# Where the exporter was shipped file by file, before it was one file.
OLD_LIBRARY = f"{LIB_DIR}/{EXPORTER_PACKAGE}"
FILES = (PROMETHEUS_CONFIG, PROMETHEUS_RULES, PROMETHEUS_DEFAULTS, ALERTMANAGER_CONFIG, ALERTMANAGER_DEFAULTS)
# Node exporter everywhere, the Slurm exporter's Python on the controller, the rest on the monitoring host.
PACKAGES = {"*": ("prometheus-node-exporter",), "controller": ("python3", "python3-prometheus-client"),
            "monitoring": ("prometheus", "prometheus-alertmanager")}
UNITS = {"*": ("prometheus-node-exporter.service",), "controller": (slurm_exporter.UNIT,),
         "monitoring": ("prometheus.service", "prometheus-alertmanager.service")}


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """With monitoring: the textfile directory, the Slurm exporter's program (and its old layout's directory),
    launcher and unit, Prometheus' and Alertmanager's files; each group's packages and daemons."""
    known = tuple(p for each in PACKAGES.values() for p in each)
    if valid.monitoring is None:
        return Footprint(known=known)
    on = ("*", *groups)
    return Footprint(paths=(TEXTFILE_DIR, LIB_DIR, programs.EXPORTER, OLD_LIBRARY, slurm_exporter.LAUNCHER,
                            slurm_exporter.UNIT_PATH, *FILES),
                     units=tuple(u for g in on for u in UNITS.get(g, ())),
                     packages=tuple(p for g in on for p in PACKAGES.get(g, ())), known=known)


def listens(port: int, what: str) -> str:
    return until(f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'", f"{what} listens on port {port}")


@step("monitoring", footprint=footprint)
def monitoring_daemons(here: Here) -> None:
    valid = here.valid
    if valid.monitoring is None:
        return
    # Debian's package makes the textfile directory; the health check writes there as root.
    ops.directory(here, name=f"{TEXTFILE_DIR} (node exporter's textfile collector)", path=TEXTFILE_DIR,
                  user="prometheus", group="prometheus")
    ops.daemon(here, name="node exporter runs", unit="prometheus-node-exporter", inputs="", restart=False,
               ready=listens(NODE_EXPORTER_PORT, "node exporter"))
    if "controller" in here.groups:
        _slurm_exporter(here)
    if "monitoring" in here.groups:
        _prometheus(here)


def _slurm_exporter(here: Here) -> None:
    """The program and its launcher renamed into place, the unit read by systemd, and the exporter (re)started on
    them; then the old layout's directory, which nothing runs any more, removed."""
    ops.directory(here, name=f"the Slurm exporter: {LIB_DIR}", path=LIB_DIR)
    program = ops.file(here, name=f"the Slurm exporter: the program, {programs.EXPORTER}", path=programs.EXPORTER,
                       content=programs.exporter_program(), atomic=True)
    launcher = ops.file(here, name=f"the Slurm exporter: {slurm_exporter.LAUNCHER}", path=slurm_exporter.LAUNCHER,
                        content=slurm_exporter.launcher(), mode="0755", atomic=True)
    unit = ops.file(here, name=f"the Slurm exporter's unit {slurm_exporter.UNIT}", path=slurm_exporter.UNIT_PATH,
                    content=slurm_exporter.unit(here.valid))
    ops.systemd_reads(here, "the Slurm exporter's unit", "systemd-slurm-exporter", [unit])
    ops.service(here, name="the Slurm exporter runs", unit=slurm_exporter.UNIT, inputs=(program, launcher, unit),
                why="its program changed", ready=listens(SLURM_EXPORTER_PORT, "the Slurm exporter"))
    ops.tree_absent(here, name=f"the Slurm exporter: no file by file copy ({OLD_LIBRARY})", path=OLD_LIBRARY)


def _prometheus(here: Here) -> None:
    """Prometheus and Alertmanager: a new command line (/etc/default) restarts the daemon; new configuration or
    rules alone are reloaded (SIGHUP, their units' ExecReload), so Prometheus keeps scraping and its alerts keep their
    state. Either is recorded once done, and owed until then."""
    files = {path: ops.file(here, name=f"monitoring: {path}", path=path, content=text)
             for path, text in monitoring.files(here.valid).items()}
    for unit, port, flags, configs in (
            ("prometheus-alertmanager", ALERTMANAGER_PORT, ALERTMANAGER_DEFAULTS, (ALERTMANAGER_CONFIG,)),
            ("prometheus", PROMETHEUS_PORT, PROMETHEUS_DEFAULTS,
             tuple(p for p in files if p not in (ALERTMANAGER_CONFIG, ALERTMANAGER_DEFAULTS, PROMETHEUS_DEFAULTS)))):
        ran = ops.service(here, name=f"{unit} runs with the inventory's command line", unit=unit,
                          inputs=(files[flags],), why="its command line changed", ready=listens(port, unit))
        ops.reload(here, name=f"{unit} reads the inventory's configuration", unit=unit, reads="configuration",
                   files=[files[p] for p in configs], started=ran)
