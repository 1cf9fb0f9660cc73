"""`clusterforge admit`'s mistakes, each exit 2 with what and where, before any host is reached; and the one command it
asks of the controller per hold (its run on the real Slurm: tests/realslurm/test_admit.py)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from golden_cases import PROD

from clusterforge.cli import cli
from clusterforge.slurm import reservations


def test_nodes_not_in_the_inventory_are_named():
    result = CliRunner().invoke(cli, ["admit", str(PROD), "gpu-node-[032-034]"])
    assert result.exit_code == 2
    assert f"HOSTS: not hosts or groups of {PROD}: gpu-node-[033-034]" in result.output


def test_hosts_that_are_not_a_hostlist_are_refused():
    result = CliRunner().invoke(cli, ["admit", str(PROD), "gpu-node-[031-"])
    assert result.exit_code == 2 and "HOSTS gpu-node-[031-: " in result.output


def test_admitting_cancels_the_gates_jobs_in_the_hold_before_deleting_it_and_touches_only_the_gates_holds():
    command = reservations.admit_command("cf-gate-new-gpu03")
    # Only root's jobs named cf-gate: (tests/realslurm/test_admit.py: an admin's job in the hold is left running).
    assert "--reservation=cf-gate-new-gpu03 --format='%i %u %j' --user=root | awk '$3 ~ /^cf-gate:/" in command
    assert "scancel --reservation" not in command
    assert command.index("scancel $ids") < command.index("scontrol delete ReservationName=cf-gate-new-gpu03")
    with pytest.raises(ValueError, match="not a hold of the admission gate"):
        reservations.admit_command("site-maintenance")
