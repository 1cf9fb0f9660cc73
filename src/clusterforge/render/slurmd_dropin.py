"""The systemd drop-in that holds slurmd back until the node's GPU device files exist.

slurmd checks gres.conf's File= devices at start; started before the driver has made them (early at boot), it
registers fewer GPUs than configured and slurmctld drains the node. Waiting in ExecStartPre covers boot and deploy.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import ValidCluster
from .text import fill, header

WAIT_S = 120


def gpu_wait(valid: ValidCluster, device_files: Sequence[str]) -> str:
    devices = " ".join(device_files)
    # systemd expands $VAR in Exec lines; $$ passes a literal $ to the shell.
    script = (f"for _ in $$(seq {WAIT_S}); do missing=; for f in {devices}; do "
              "[ -c $$f ] || missing=\"$$missing $$f\"; done; [ -z \"$$missing\" ] && exit 0; sleep 1; done; "
              f"echo \"slurmd: GPU device files missing after {WAIT_S} s:$$missing\" >&2; exit 1")
    return fill("slurmd-gpus.conf.j2", header=header(valid), timeout=WAIT_S + 60, script=script)
