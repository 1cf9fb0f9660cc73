"""slurm/nodes.responding_command, the deploy's wait after slurmd (re)starts, against the real slurmctld and slurmd of
26.05 (the release whose slurmd runs here): scontrol under SLURM_TIME_FORMAT=%s prints the start the node's slurmd
registered with, in seconds; once that slurmd has stopped, slurmctld still holds the node responding with that start
(until a ping finds it gone: SlurmdTimeout/3 after it last answered), so the wait asking sinfo alone passed for a
slurmd started since that never registered; this one waits until a slurmd of that start registers. scontrol's two
forms the wait reads (seconds, and None for a node never registered) are checked on every release.

The harness runs slurmd without systemd: systemctl is a stand-in that says slurmd.service is active and prints the
start the test gives it as systemd's format_timestamp does (InactiveExitTimestamp)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from realslurm import harness

from clusterforge.slurm import nodes

NODE = "gpu01"


def cluster(scratch: Path) -> Path:
    """One node, its slurmd here; SlurmdTimeout long, so no ping finds a stopped slurmd gone while the test runs."""
    return harness.bare_etc(scratch, "responding", "SlurmdTimeout=600\n"
                            f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 State=UNKNOWN\n"
                            f"PartitionName=all Nodes={NODE} Default=YES State=UP\n")


def unit_started(bin_dir: Path) -> int:
    """systemd (re)started slurmd.service now, as the stand-in systemctl says from now on; that start, in seconds."""
    now = int(time.time())
    (bin_dir / "systemctl").write_text(
        '#!/bin/sh\ncase "$*" in\n"is-active slurmd.service") echo active;;\n'
        '"show --property=InactiveExitTimestamp --value slurmd.service") '
        f"date -d @{now} '+%a %Y-%m-%d %H:%M:%S %Z';;\n"
        '*) echo "not understood: $*" >&2; exit 1;;\nesac\n')
    (bin_dir / "systemctl").chmod(0o755)
    return now


def waited(ctld: harness.Slurmctld, bin_dir: Path) -> int:
    command = f"PATH={bin_dir}:$PATH; export PATH; {nodes.responding_command(NODE)}"
    return ctld.run("sh", "-c", command, check=False).returncode


def registered_start(ctld: harness.Slurmctld) -> str:
    return harness.parse_oneliner(ctld.run("scontrol", "-o", "show", "node", NODE,
                                           env={"SLURM_TIME_FORMAT": "%s"}).stdout)[0]["SlurmdStartTime"]


def state(ctld: harness.Slurmctld) -> str:
    return ctld.run("sinfo", "--noheader", f"--node={NODE}", "--format=%T").stdout.strip()


def until_passes(ctld: harness.Slurmctld, bin_dir: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while waited(ctld, bin_dir) != 0:
        assert time.monotonic() < deadline, f"the wait did not pass within {timeout:g} s: {state(ctld)}"
        time.sleep(0.5)


@pytest.mark.realslurm
def test_the_wait_passes_on_a_registration_of_the_slurmd_started_last_only():
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch, harness.running_slurmctld(runtime, cluster(scratch), scratch) as ctld:
        bin_dir = scratch / "bin"
        bin_dir.mkdir(mode=0o755)
        assert registered_start(ctld) == "None"  # never registered
        first = unit_started(bin_dir)
        assert waited(ctld, bin_dir) == 1
        with harness.running_slurmd(ctld, NODE):
            until_passes(ctld, bin_dir)
            registered = registered_start(ctld)
            assert int(registered) >= first

        time.sleep(1.1)   # the next start of the unit falls in a later second than that registration
        again = unit_started(bin_dir)
        # The slurmd has stopped and a new start never registered: slurmctld still hears the node, from the slurmd
        # before, which is all sinfo tells; the wait does not pass.
        assert registered_start(ctld) == registered and "*" not in state(ctld), state(ctld)
        assert waited(ctld, bin_dir) == 1

        with harness.running_slurmd(ctld, NODE):
            until_passes(ctld, bin_dir)
            assert int(registered_start(ctld)) >= again


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_scontrol_prints_seconds_under_the_time_format_and_none_for_a_node_never_registered(version):
    # The two forms the wait reads, on every release (only 26.05's slurmd runs here): the reason's time stands for
    # SlurmdStartTime's, both printed by slurm_make_time_str.
    runtime = harness.require(version)
    with harness.scratch_dir() as scratch, harness.running_slurmctld(runtime, cluster(scratch), scratch) as ctld:
        before = int(time.time())
        ctld.scontrol("update", f"NodeName={NODE}", "State=DRAIN", "Reason=x")
        shown = harness.parse_oneliner(ctld.run("scontrol", "-o", "show", "node", NODE,
                                                env={"SLURM_TIME_FORMAT": "%s"}).stdout)[0]
    assert shown["SlurmdStartTime"] == "None"
    assert shown["Reason"].startswith("x [root@") and before <= int(shown["Reason"][8:-1]) <= time.time()
