"""drains.py: whose drain a reason is, and the controller's commands that set and lift clusterforge's drains, run by
a real shell against stand-ins for sinfo and scontrol (the controller's Slurm is tests/e2e's business)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from clusterforge.slurm import drains
from clusterforge.slurm.drains import REMOVED, Drain, parse_reason
from clusterforge.slurm.nodes import Node, parse_node, parse_sinfo


def test_a_reason_says_who_set_it():
    assert Drain("gpu", "xid79", "gpu3 0000:9b:00.0").reason == "cf:gpu:xid79 gpu3 0000:9b:00.0"
    assert parse_reason("cf:gpu:xid79 gpu3 0000:9b:00.0") == Drain("gpu", "xid79", "gpu3 0000:9b:00.0")
    assert parse_reason(REMOVED.reason) == REMOVED
    assert parse_reason("clusterforge: removed from inventory").cause == "removed"  # before the cf: format
    # as `scontrol show node` (clusterforge check) prints a reason: who set it and when
    assert parse_reason("clusterforge: removed from inventory [root@2026-11-22T23:40:00]").cause == "removed"
    assert parse_reason("cf:removed from the inventory [root@2026-11-22T23:40:00]").cause == "removed"
    assert parse_reason("clusterforge: removed from inventory, says the admin") is None
    for someone_elses in ("admin: fan", "Kill task failed", "Not responding", "cf", "cf:", " disk swap cf:gpu", ""):
        assert parse_reason(someone_elses) is None, someone_elses


def test_only_a_drain_of_clusterforge_for_that_cause_and_nothing_else_is_resumable():
    ours = REMOVED.reason
    assert Node("n", "drained", ours).resumable_for("removed")
    assert Node("n", "draining", ours).resumable_for("removed")
    assert not Node("n", "drained", ours).resumable_for("gpu")
    assert not Node("n", "drained", "admin: fan").resumable_for("removed")
    for state in ("down", "down*", "drained*", "fail", "maint", "idle"):
        assert not Node("n", state, ours).resumable_for("removed"), state


def test_sinfo_lines_become_one_state_per_node():
    lines = ["gpu01|drained|admin: fan|", "gpu01|drained|admin: fan|", "gpu02|draining|cf:removed from the inventory|",
             "gpu03|idle|none|", ""]
    fields = ("NodeList", "StateLong", "Reason")
    assert parse_sinfo("\n".join(lines), fields) == [Node("gpu01", "drained", "admin: fan"),
                                                     Node("gpu02", "draining", "cf:removed from the inventory"),
                                                     Node("gpu03", "idle", "")]


@pytest.fixture
def slurm(tmp_path: Path):
    """sinfo answering from a file per node ("state|reason"), scontrol writing what it was asked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    (bin_dir / "sinfo").write_text(
        "#!/bin/sh\nfor a; do case $a in --nodes=*) n=${a#--nodes=};; esac; done\n"
        f"case \"$*\" in *%N*) for f in {nodes}/*; do echo \"$(basename $f)|$(cut -d'|' -f1 $f)\"; done;; "
        f"*) cat {nodes}/$n;; esac\n")
    # scontrol refuses an update of a node named in the file "refuse", as slurmctld may
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path}/scontrol\n"
                                      f"! grep -qx \"${{2#NodeName=}}\" {tmp_path}/refuse 2>/dev/null\n")
    for tool in ("sinfo", "scontrol"):
        os.chmod(bin_dir / tool, 0o755)

    def run(command: str, refused: tuple[str, ...] = (), **states: str) -> list[str]:
        for name, state in states.items():
            (nodes / name).write_text(state + "\n")
        (tmp_path / "refuse").write_text("".join(f"{name}\n" for name in refused))
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        done = subprocess.run(["sh", "-c", command], check=False, env=env, capture_output=True, text=True)
        assert done.returncode == (1 if refused else 0), done.stderr
        for name in refused:
            assert re.search(rf"slurmctld refused to (lift the drain of|drain) {name}$", done.stderr, re.MULTILINE)
        log = tmp_path / "scontrol"
        asked = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return asked

    return run


def test_the_resume_reads_the_reason_again_and_lifts_only_its_own(slurm):
    asked = slurm(drains.resume_command(["gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "gpu06"], "removed"),
                  gpu01="drained|cf:removed from the inventory",
                  gpu02="draining|clusterforge: removed from inventory",
                  gpu03="drained|admin: fan",                              # an admin took it over meanwhile
                  gpu04="down*|cf:removed from the inventory",            # and Slurm finds it not responding
                  gpu05="drained|cf:gpu:xid79 gpu3",                       # another cause
                  gpu06="drained|cf:removedx")
    assert asked == ['update NodeName=gpu01 State=UNDRAIN', 'update NodeName=gpu02 State=UNDRAIN']


def test_a_lift_slurmctld_refuses_fails_the_command_after_the_others_were_tried(slurm):
    asked = slurm(drains.resume_command(["gpu01", "gpu02"], "removed"), refused=("gpu01",),
                  gpu01="drained|cf:removed from the inventory", gpu02="drained|cf:removed from the inventory")
    assert asked == ['update NodeName=gpu01 State=UNDRAIN', 'update NodeName=gpu02 State=UNDRAIN']


def test_the_drain_leaves_a_node_alone_that_is_drained_or_down_already(slurm):
    asked = slurm(drains.drain_command("gpu[01-03]", REMOVED),
                  gpu01="idle|none", gpu02="drained|admin: fan", gpu03="down*|Not responding")
    assert asked == ["update NodeName=gpu01 State=DRAIN Reason=cf:removed from the inventory"]


def test_the_drain_leaves_a_node_alone_that_is_rebooting_or_in_maintenance(slurm):
    # sinfo prints "reboot" before "drain": a node drained with a reboot asked (found by the real-Slurm interleavings,
    # whose drain relabelled it) shows as rebooting, not drained.
    asked = slurm(drains.drain_command("gpu[01-06]", REMOVED), gpu01="reboot|none", gpu02="reboot^|none",
                  gpu03="maint|none", gpu04="idle$|none", gpu05="mixed@|none", gpu06="allocated|none")
    assert asked == ["update NodeName=gpu06 State=DRAIN Reason=cf:removed from the inventory"]


def test_a_drain_slurmctld_refuses_fails_the_command_after_the_others_were_tried(slurm):
    asked = slurm(drains.drain_command("gpu[01-03]", REMOVED), refused=("gpu01",),
                  gpu01="idle|none", gpu02="mixed|none", gpu03="idle|none")
    assert asked == [f"update NodeName=gpu0{i} State=DRAIN Reason=cf:removed from the inventory" for i in (1, 2, 3)]


def test_a_drain_whose_sinfo_fails_fails_and_ends_the_script_it_is_part_of(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, script in (("sinfo", "echo 'slurm_load_node: Unable to contact slurm controller' >&2; exit 1"),
                         ("scontrol", f"echo \"$*\" >> {tmp_path}/scontrol")):
        (bin_dir / tool).write_text(f"#!/bin/sh\n{script}\n")
        os.chmod(bin_dir / tool, 0o755)
    done = subprocess.run(["sh", "-c", drains.drain_command("gpu[01-03]", REMOVED) + "; echo after"], check=False,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, capture_output=True,
                          text=True)
    assert done.returncode == 1 and "after" not in done.stdout and not (tmp_path / "scontrol").exists()
    assert "sinfo could not list gpu[01-03]" in done.stderr and "Unable to contact" in done.stderr


def test_only_a_reboot_issued_is_one_whose_registration_lifts_a_drain():
    issued = parse_node("NodeName=gpu01 State=DOWN+DRAIN+REBOOT_ISSUED Reason=Reboot ASAP : reboot issued")
    requested = parse_node("NodeName=gpu01 State=MIXED+REBOOT_REQUESTED Reason=reboot requested")
    assert issued.rebooting and not requested.rebooting


def test_a_reboot_is_asked_only_for_nodes_clusterforge_holds_for_that_purpose(slurm):
    reboot = Drain("stack", "driver", "reboot into the new driver")
    asked = slurm(drains.reboot_command([f"gpu0{i}" for i in range(1, 9)], ("stack", "roll"), reboot),
                  gpu01="drained|cf:stack:driver moves to 550.127.08",
                  gpu02="drained|RMA gpu3 (admin)",                  # an admin's: a reboot would lift it
                  gpu03="draining|cf:roll:reboot batch 1/2",        # the roll's, for this very purpose
                  gpu04="drained|Kill task failed",                 # Slurm's own
                  gpu05="down*|cf:stack:driver moves to 550.127.08",  # and Slurm finds it not responding
                  gpu06="drained|cf:gpu:xid79 gpu3",                # the health check's: not this purpose
                  gpu07="draining@|cf:stack:driver reboot into the new driver",  # asked already
                  gpu08="idle|none")                                # nobody drained it: not rebooted either
    said = "nextstate=resume reason=cf:stack:driver reboot into the new driver"
    assert asked == [f"reboot ASAP {said} gpu01", f"reboot ASAP {said} gpu03"]


def test_a_node_held_by_another_is_named_and_left_as_it_is(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text("#!/bin/sh\necho 'drained|RMA gpu3 (admin)'\n")
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path}/scontrol\n")
    for tool in ("sinfo", "scontrol"):
        os.chmod(bin_dir / tool, 0o755)
    done = subprocess.run(["sh", "-c", drains.reboot_command(["gpu02"], ("stack",), Drain("stack"))], check=False,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, capture_output=True,
                          text=True)
    assert done.returncode == 0 and not (tmp_path / "scontrol").exists()
    assert done.stdout == "gpu02 left as it is: held by another (drained|RMA gpu3 (admin))\n"


def test_who_holds_a_node_out_of_service():
    causes = ("stack", "roll")
    assert not Node("n", "drained", "cf:stack:driver moves to 550").held_by_another(causes)
    assert not Node("n", "draining", "cf:roll:reboot batch 1/3").held_by_another(causes)
    assert not Node("n", "idle", "").held_by_another(causes)
    assert not Node("n", "mixed", "").held_by_another(causes)
    for state, reason in (("drained", "RMA gpu3 (admin)"), ("drained", "cf:gpu:xid79 gpu3"),
                          ("down*", "Not responding"), ("down", "cf:stack:driver"), ("fail", "admin"),
                          ("maint", ""), ("reboot^", "")):
        assert Node("n", state, reason).held_by_another(causes), (state, reason)
