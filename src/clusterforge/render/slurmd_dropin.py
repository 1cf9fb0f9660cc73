"""The systemd drop-in that holds slurmd back until the node is ready for jobs: its GPU device files exist, its
local disk is mounted where containers keep their data, and the GPU stack's daemons run.

slurmd checks gres.conf's File= devices at start; started before the driver has made them (early at boot), it
registers fewer GPUs than configured and slurmctld drains the node. Waiting in ExecStartPre covers boot and deploy.
A container job started before the local disk is mounted would fill the root file system instead.
On NVSwitch nodes slurmd requires the fabric manager: with a fabric that never came up, CUDA sees no usable GPU, and
a slurmd that does not start (its unit says which dependency failed) keeps jobs off the node; restarting the fabric
manager restarts slurmd, which jobs survive.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import Machine, ValidCluster
from ..model.stack import FABRIC_MANAGER_UNIT, PERSISTENCED_UNIT
from .stack import gpu_parts
from .text import fill, header

WAIT_S = 120


def render(valid: ValidCluster, machine: Machine) -> str | None:
    """The drop-in for a compute host, or None where slurmd has nothing to wait for."""
    disk = machine.node.profile.local_disk if machine.node is not None and valid.containers is not None else None
    if not machine.device_files and disk is None:
        return None
    units = [p.unit for p in gpu_parts(valid, machine) if p.unit in (PERSISTENCED_UNIT, FABRIC_MANAGER_UNIT)]
    return fill("slurmd-gpus.conf.j2", header=header(valid), timeout=WAIT_S + 60, local_disk=disk,
                after=list(dict.fromkeys([PERSISTENCED_UNIT, *units])),
                requires=[u for u in units if u == FABRIC_MANAGER_UNIT],
                script=gpu_wait(machine.device_files) if machine.device_files else None)


def gpu_wait(device_files: Sequence[str]) -> str:
    devices = " ".join(device_files)
    # systemd expands $VAR in Exec lines; $$ passes a literal $ to the shell.
    script = (f"for _ in $$(seq {WAIT_S}); do missing=; for f in {devices}; do "
              "[ -c $$f ] || missing=\"$$missing $$f\"; done; [ -z \"$$missing\" ] && exit 0; sleep 1; done; "
              f"echo \"slurmd: GPU device files missing after {WAIT_S} s:$$missing\" >&2; exit 1")
    return script
