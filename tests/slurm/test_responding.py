"""slurm/nodes.responding_command, the deploy's wait after slurmd (re)starts, run by a real sh: Slurm's commands the
stand-in's (tests/slurm_standin, SlurmdStartTime as slurmd reported it at its registration), systemctl one that prints
slurmd.service's state and InactiveExitTimestamp as systemd's format_timestamp does, in the caller's time zone.
It passes only once slurmctld has heard from the slurmd of the unit's last start."""

from __future__ import annotations

from pathlib import Path

import pytest
from slurm_standin import Node, Partition, Slurm
from slurm_standin.cluster import START

from clusterforge.slurm import nodes

NODE = "gpu01"


def systemd(directory: Path, state: str = "active", since: int | None = START) -> Path:
    """A systemctl answering the wait's two questions about slurmd.service (is-active exits 3 where not active)."""
    shown = f"date -d @{since} '+%a %Y-%m-%d %H:%M:%S %Z'" if since is not None else "echo"
    (directory / "systemctl").write_text(
        '#!/bin/sh\ncase "$*" in\n'
        f"'is-active slurmd.service') echo {state}; exit {0 if state == 'active' else 3};;\n"
        f"'show --property=InactiveExitTimestamp --value slurmd.service') {shown};;\n"
        '*) echo "not understood: $*" >&2; exit 1;;\nesac\n')
    (directory / "systemctl").chmod(0o755)
    return directory


def waited(slurm: Slurm, bin_dir: Path, tz: str = "UTC") -> int:
    """The wait's exit status on NODE, run where the node's time zone is ``tz``."""
    return slurm.shell(f"PATH={bin_dir}:$PATH TZ={tz}; export PATH TZ; {nodes.responding_command(NODE)}").rc


def node(**state) -> Slurm:
    """slurmctld holding NODE (in a partition: sinfo lists no node outside one) so."""
    return Slurm({NODE: Node(**state)}, {"all": Partition([NODE], default=True)}, release="24.11")


@pytest.mark.parametrize("registered", [START, START + 1, START + 3600])
def test_a_slurmd_registered_since_the_units_start_passes(tmp_path, registered):
    # the same second too: systemd's start and slurmd's both in whole seconds, slurmd's the later
    assert waited(node(slurmd_start=registered), systemd(tmp_path, since=START)) == 0


@pytest.mark.parametrize("tz", ["Australia/Sydney", "Pacific/Chatham", "America/St_Johns", "UTC"])
def test_the_nodes_time_zone_changes_nothing(tmp_path, tz):
    assert waited(node(slurmd_start=START), systemd(tmp_path, since=START), tz) == 0
    assert waited(node(slurmd_start=START - 1), systemd(tmp_path, since=START), tz) == 1


def test_a_registration_from_before_the_units_start_is_the_old_slurmds_though_slurmctld_hears_the_node(tmp_path):
    slurm = node(slurmd_start=START - 1)
    assert slurm.run(["sinfo", "--noheader", f"--node={NODE}", "--format=%T"]).out == "idle\n"
    assert waited(slurm, systemd(tmp_path, since=START)) == 1


def test_a_node_never_registered_does_not_pass(tmp_path):
    # slurmctld holds 0 until a registration, and scontrol prints SlurmdStartTime=None
    slurm = node(slurmd_start=None)
    assert "SlurmdStartTime=None " in slurm.run(["scontrol", "show", "node", "-o", NODE]).out
    assert waited(slurm, systemd(tmp_path, since=START)) == 1


@pytest.mark.parametrize("state", ["failed", "inactive", "activating"])
def test_a_unit_not_active_does_not_pass_though_its_slurmd_registered(tmp_path, state):
    assert waited(node(slurmd_start=START + 1), systemd(tmp_path, state=state, since=START)) == 1


def test_a_unit_never_started_does_not_pass(tmp_path):
    assert waited(node(slurmd_start=START), systemd(tmp_path, since=None)) == 1


@pytest.mark.parametrize("state", [dict(flags={"NOT_RESPONDING"}), dict(base="DOWN")])
def test_a_node_slurmctld_does_not_hear_or_holds_down_does_not_pass(tmp_path, state):
    assert waited(node(slurmd_start=START + 1, **state), systemd(tmp_path, since=START)) == 1


def test_the_node_is_asked_by_its_name_as_one_word():
    assert nodes.responding_command("gpu-a01").endswith(" sh gpu-a01")
    assert nodes.responding_command("x; rm -rf /").endswith(" sh 'x; rm -rf /'")
