"""The admission gate's files on the controller: the launcher its unit runs, and the unit. The program itself is
clusterforge's gate package with the health and admission modules it imports, shipped as one file
(render/programs.py); its plan is admission.json (render/admission.py)."""

from __future__ import annotations

from ..gate import PACKAGE, STATE_DIR
from ..model import ValidCluster
from .health import LIB_DIR, imports_from
from .text import header

LAUNCHER = "/usr/sbin/clusterforge-gate"
PROGRAM = f"{LIB_DIR}/clusterforge-gate.pyz"
UNIT = "clusterforge-gate.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
ADMITTED_DIR = f"{STATE_DIR}/admitted"
HOLDS_DIR = f"{STATE_DIR}/holds"  # the deploy's notes of the holds it made (roles/gate.py)
# Seconds between the gate's passes: a pass is three Slurm queries (0.6 a second for slurmctld at 5 s), and each test
# costs about two passes beyond its own time (submitted, seen ended), so the interval is what admitting a node waits
# beyond its tests (benchmarks/accept_real.py: 102 s at 10 s, 45 s at 2 s, with stand-ins that answer at once).
INTERVAL_S = 5


def admitted_path(node: str) -> str:
    return f"{ADMITTED_DIR}/{node}"


def hold_path(node: str) -> str:
    return f"{HOLDS_DIR}/{node}"


def launcher() -> str:
    """Isolated mode (-I): no PYTHON* variable, user site or script directory puts another module in its way."""
    return (f"#!/usr/bin/python3 -I\n# {LAUNCHER}: clusterforge's admission gate.\n"
            "# Written by clusterforge's deploy; a change here is overwritten by the next run.\n"
            f"{imports_from(PROGRAM)}from {PACKAGE}.gate.main import main\nsys.exit(main(sys.argv[1:]))\n")


def unit(valid: ValidCluster) -> str:
    """As root: it creates and deletes reservations, drains nodes and runs its tests as root's jobs (the holds admit
    root alone). Restarted whatever ends it: a gate that is not running holds every held node for good."""
    return (f"{header(valid, 'the admission gate, which tests held nodes and releases them')}\n"
            "[Unit]\nDescription=clusterforge's admission gate: tests held nodes in their reservations\n"
            "After=network-online.target slurmctld.service\nWants=network-online.target\n\n"
            f"[Service]\nExecStart={LAUNCHER} --interval {INTERVAL_S}\n"
            "Restart=always\nRestartSec=10\n\n"
            "[Install]\nWantedBy=multi-user.target\n")
