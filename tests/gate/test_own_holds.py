"""Issue 46, 8: the gate's own holds are told by what the gate gives them, not by a name anyone may give a
reservation. Turning admission off (roles/gate.py runs reservations.release_all_command on the controller) deletes
the gate's holds and nothing else; the gate, check, the exporter and `admit` see the same holds
(reservations.held). The listing is what slurmctld 26.05 prints (tests/health/fixtures), and an admin's reservations
bearing a hold's name; scontrol is a stand-in that prints it and logs each delete, the command a real shell
(tests/realslurm/test_gate_boundary.py runs it on the real slurmctld)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from clusterforge.slurm import reservations

FIXTURES = Path(__file__).parents[1] / "health" / "fixtures"
GATES = " ".join((FIXTURES / "scontrol-show-reservation-26.05.txt").read_text().split("\n\n")[0].split())
ADMINS = [
    # an admin's, for alice's acceptance run, named as a hold
    GATES.replace("cf-gate-new-gpu-b02", "cf-gate-new-gpu-b03").replace("Nodes=gpu-b02", "Nodes=gpu-b03")
         .replace("Users=root", "Users=alice"),
    # root's, named for one node, holding two
    GATES.replace("cf-gate-new-gpu-b02", "cf-gate-repaired-gpu-b04").replace("Nodes=gpu-b02", "Nodes=gpu-b[04-05]"),
    # root's, no MAINT: no hold at all
    GATES.replace("cf-gate-new-gpu-b02", "cf-gate-new-gpu-b06").replace("Nodes=gpu-b02", "Nodes=gpu-b06")
         .replace("Flags=MAINT,IGNORE_JOBS,SPEC_NODES", "Flags=SPEC_NODES"),
    # not named as one
    GATES.replace("cf-gate-new-gpu-b02", "site-maintenance"),
]
LISTING = "\n".join([GATES, *ADMINS]) + "\n"


def test_admission_off_deletes_the_gates_holds_and_no_reservation_that_only_bears_the_name(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "listing").write_text(LISTING)
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(f"#!/bin/sh\ncase \"$1 $2\" in\n  '-o show') cat {tmp_path / 'listing'} ;;\n"
                        f"  'delete '*) echo \"$2\" >> {tmp_path / 'deleted'} ;;\n  *) exit 1 ;;\nesac\n")
    scontrol.chmod(0o755)
    done = subprocess.run(["sh", "-c", reservations.release_all_command()], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "deleted").read_text() == "ReservationName=cf-gate-new-gpu-b02\n"
    # What the gate, check, the exporter and admit take for holds: the same one.
    assert reservations.held(reservations.parse_reservations(LISTING)) == {"gpu-b02": "new"}


def test_a_listing_slurmctld_does_not_answer_deletes_nothing_and_fails(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text("#!/bin/sh\necho 'slurm_load_reservations error: Unable to contact slurm "
                                      "controller' >&2\nexit 1\n")
    (bin_dir / "scontrol").chmod(0o755)
    done = subprocess.run(["sh", "-c", reservations.release_all_command()], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert done.returncode != 0
