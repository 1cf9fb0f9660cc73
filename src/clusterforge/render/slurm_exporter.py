"""The Slurm exporter's files on the controller: the launcher its unit runs, and the unit. The program itself is
clusterforge's exporter package with the health modules it imports, shipped as one file (render/programs.py)."""

from __future__ import annotations

from ..exporter import PACKAGE
from ..model import ValidCluster
from ..model.settings import SLURM_EXPORTER_PORT
from .health import LIB_DIR, imports_from
from .text import header

LAUNCHER = "/usr/sbin/clusterforge-slurm-exporter"
PROGRAM = f"{LIB_DIR}/clusterforge-slurm-exporter.pyz"
UNIT = "clusterforge-slurm-exporter.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
# Each Slurm command a scrape runs is cut here, below Prometheus' own 10 s scrape timeout: a scrape whose command
# hangs still answers, with that command's metrics missing and its _ok at 0.
COMMAND_TIMEOUT_S = 8


def launcher() -> str:
    """Isolated mode (-I): no PYTHON* variable, user site or script directory puts another module in its way; the
    system's site packages stay, where Debian's python3-prometheus-client is."""
    return (f"#!/usr/bin/python3 -I\n# {LAUNCHER}: clusterforge's Slurm exporter.\n"
            "# Written by clusterforge's deploy; a change here is overwritten by the next run.\n"
            f"{imports_from(PROGRAM)}from {PACKAGE}.exporter.main import main\nsys.exit(main(sys.argv[1:]))\n")


def unit(valid: ValidCluster) -> str:
    """Run as nobody: reading Slurm's state needs no privilege, with munge or auth/slurm alike."""
    return (f"{header(valid, 'the Slurm exporter, which Prometheus scrapes')}\n"
            "[Unit]\nDescription=clusterforge's Slurm exporter for Prometheus\n"
            "After=network-online.target slurmctld.service\nWants=network-online.target\n\n"
            f"[Service]\nExecStart={LAUNCHER} --listen :{SLURM_EXPORTER_PORT} --timeout {COMMAND_TIMEOUT_S}\n"
            "User=nobody\nGroup=nogroup\nRestart=on-failure\nRestartSec=5\n\n"
            "[Install]\nWantedBy=multi-user.target\n")
