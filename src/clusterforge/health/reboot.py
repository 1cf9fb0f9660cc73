"""Slurm's RebootProgram on every compute node (``clusterforge-reboot``, the health program's ``reboot`` mode): where
the node holds hardware faults in this boot, the evidence the reboot would wipe is kept first (evidence.py), then the
inventory's reboot program runs (Health(reboot_program=...), in the expectations), whoever asked for the reboot: the
roll, the gate, an admin's ``scontrol reboot``. A node without faults reboots at once.

slurmd runs RebootProgram through system(), as root, without PATH, with the node's new features as arguments where a
change of them asks for the reboot; the inventory's program is run the same way (``/bin/sh -c``), those arguments
after its own. Nothing here may stop the reboot: expectations that cannot be read run the default program, and
evidence that cannot be kept is said and skipped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from . import evidence, statedir
from . import faults as held_faults
from ..slurm.commands import Run
from .expect import DEFAULT_REBOOT_PROGRAM, Expectations
from .kernel import boot_id
from .probes import reason_of

SHELL = "/bin/sh"


def reboot(expect_path: str, run: Run, state_dir: str, features: Sequence[str]) -> int:
    """Keep the evidence of the faults held in this boot, then become the inventory's reboot program (exec: its exit
    status is slurmd's to see). Returns only where that cannot be started."""
    program = DEFAULT_REBOOT_PROGRAM
    try:
        with open(expect_path, encoding="utf-8") as file:
            expect = Expectations.from_json(file.read())
        program = expect.reboot_program
        faults = held_faults.held(state_dir, boot_id(expect)) or []
        if faults:
            kept_in = evidence.keep(expect, run, faults, "reboot")
            print(f"evidence of {reason_of(faults)} kept in {kept_in}")
            statedir.record(state_dir, [f"evidence kept in {kept_in} before a reboot"])
    except Exception as error:  # noqa: BLE001 - the reboot comes first, whatever went wrong before it
        print(f"no evidence kept before the reboot: {type(error).__name__}: {error}")
    print(f"reboot: {program}")
    sys.stdout.flush()
    try:
        os.execv(SHELL, [SHELL, "-c", f'{program} "$@"', program, *features])
    except OSError as error:
        print(f"could not run {SHELL} for {program}: {error.strerror}", file=sys.stderr)
    return 1
