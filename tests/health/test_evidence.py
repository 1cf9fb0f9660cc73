"""Evidence before a reset or a reboot that clusterforge causes for a hardware finding (health/evidence.py): through
the node health program as the deploy ships it (tests/health_node.py), its reset and its reboot mode (Slurm's
RebootProgram, health/reboot.py), and the keeping itself in-process where a bound is what is tested. The stand-in
nvidia-bug-report.sh writes its gzipped log where --output-file says (".gz" appended, as NVIDIA's does) and hangs,
outside its safe mode, while a test says so; the node's HCA counters are files in sysfs's layout."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from clusterforge.health import evidence, reboot
from clusterforge.slurm import commands
from clusterforge.slurm.drains import parse_reason
from clusterforge.health.expect import Expectations
from clusterforge.health.probes import Finding
from health_node import Node

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the extra kernel-log source must be root's (CI is root)")

REPO = Path(__file__).resolve().parents[2]
XID79 = "NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus."    # gpu3, until a reboot
XID95 = "NVRM: Xid (PCI:0000:5d:00): 95, pid=3434, Uncontained memory error"        # gpu3, until a reset
BUG_REPORT = """#!/bin/sh
echo "nvidia-bug-report.sh $*" >> "$NODE/bug-report-calls"
out=nvidia-bug-report.log safe=
while [ $# -gt 0 ]; do case "$1" in --output-file) out=$2; shift ;; --safe-mode) safe=1 ;; esac; shift; done
[ -e "$NODE/bug-report-hangs" ] && [ -z "$safe" ] && exec sleep 600
case "$out" in *.gz) ;; *) out=$out.gz ;; esac
{ echo "nvidia-bug-report.sh stand-in${safe:+, safe mode}"; cat "$NODE/smi.txt"; } | gzip > "$out"
echo "Complete."
"""
# The inventory's reboot program: what it was given, and the evidence there was when it ran.
FAKE_REBOOT = """#!/bin/sh
echo "$*" > "$NODE/rebooted-with"
ls "$NODE/evidence" > "$NODE/evidence-at-reboot" 2>/dev/null
exit 3
"""


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def counters(root: Path) -> None:
    """Two HCAs' port counters as sysfs lays them out: /sys/class/infiniband/<hca>/ports/<port>/<kind>/<name>."""
    for hca, values in {"mlx5_0": {"counters/symbol_error": "12", "counters/port_rcv_errors": "0",
                                   "hw_counters/out_of_buffer": "3"},
                        "mlx5_1": {"counters/link_downed": "1"}}.items():
        for name, value in values.items():
            path = root / "sys-infiniband" / hca / "ports" / "1" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{value}\n")


@pytest.fixture
def node(tmp_path):
    node = Node(tmp_path)
    executable(node.bin / "nvidia-bug-report.sh", BUG_REPORT)
    counters(tmp_path)
    node.set(journal="Nov 27 04:00:01 gpu01 kernel: NVRM: Xid (PCI:0000:5d:00): 95, pid=3434, Uncontained memory\n")
    return node


def kept(node: Node) -> list[Path]:
    return sorted((node.root / "evidence").iterdir()) if (node.root / "evidence").exists() else []


def test_a_reset_for_a_hardware_fault_keeps_the_evidence_before_nvidia_smi_resets_the_gpu(node):
    node.kernel(XID95)
    node.kernel("testbed record", extra=True)
    node.run()
    done = node.run("reset", "gpu3")
    assert done.returncode == 0, done.stdout + done.stderr
    [directory] = kept(node)
    assert re.fullmatch(r"\d{8}T\d{6}Z-xid95-gpu3-reset", directory.name)
    assert "evidence of cf:gpu:xid95 gpu3 0000:5d:00" in done.stdout and f"kept in {directory}" in done.stdout
    # There before the reset: nvidia-smi -r saw it.
    assert (node.root / "evidence-at-reset").read_text().split() == [directory.name]
    reason = (directory / "reason.txt").read_text().splitlines()
    assert reason[0] == "node: gpu01" and "before: reset" in reason
    assert [line[:31] for line in reason if line.startswith("held: ")] == ["held: cf:gpu:xid95 gpu3 0000:5d"]
    with gzip.open(directory / "nvidia-bug-report.log.gz", "rt") as report:
        assert report.readline() == "nvidia-bug-report.sh stand-in\n"
    assert (directory / "kernel.log").read_text() == (node.root / "journal").read_text()
    assert (node.root / "journal-calls").read_text() == "journalctl -k -b --no-pager -o short-iso-precise\n"
    assert "testbed record" in (directory / "kernel-records.log").read_text()
    assert (directory / "ib-counters.txt").read_text().splitlines() == [
        "mlx5_0/1/counters/port_rcv_errors 0", "mlx5_0/1/counters/symbol_error 12",
        "mlx5_0/1/hw_counters/out_of_buffer 3", "mlx5_1/1/counters/link_downed 1"]
    assert directory.stat().st_mode & 0o777 == 0o700   # root's alone: the bug report holds the node's whole setup
    assert {(directory / n).stat().st_mode & 0o777 for n in ("reason.txt", "kernel.log", "ib-counters.txt")} == {0o600}
    assert f"evidence kept in {directory} before the reset of 0000:5d:00" in (
        node.state_dir / "events.log").read_text()


def test_a_reset_of_a_gpu_that_holds_no_fault_keeps_no_evidence(node):
    node.kernel(XID95)   # gpu3's
    node.run()
    node.run("reset", "gpu0")
    assert kept(node) == [] and not (node.root / "bug-report-calls").exists()


def test_a_reboot_through_the_wrapper_keeps_the_evidence_then_runs_the_inventorys_program_with_slurmds_arguments(
        node):
    program = executable(node.root / "fake-reboot", FAKE_REBOOT)
    node.expect = replace(node.expect, reboot_program=f"{program} --now")
    node.kernel(XID79)
    node.run()
    done = node.run("reboot", "a100,ib")
    assert done.returncode == 3   # the reboot program's own status: it became the program
    assert (node.root / "rebooted-with").read_text() == "--now a100,ib\n"
    [directory] = kept(node)
    assert re.fullmatch(r"\d{8}T\d{6}Z-xid79-gpu3-reboot", directory.name)
    assert (node.root / "evidence-at-reboot").read_text().split() == [directory.name]
    assert f"reboot: {program} --now" in done.stdout


def test_a_node_without_hardware_faults_reboots_without_keeping_evidence(node):
    program = executable(node.root / "fake-reboot", FAKE_REBOOT)
    node.expect = replace(node.expect, reboot_program=str(program))
    node.run()
    assert node.run("reboot").returncode == 3
    assert kept(node) == [] and (node.root / "rebooted-with").read_text() == "\n"


def test_the_installed_reboot_launcher_runs_the_reboot_mode_with_slurmds_arguments(node):
    from clusterforge.model.settings import REBOOT_PROGRAM
    from clusterforge.render.health import PROGRAM, launcher

    text = launcher(REBOOT_PROGRAM)
    assert "main(['reboot', *sys.argv[1:]])" in text
    launched = executable(node.root / "clusterforge-reboot", text.replace(repr(PROGRAM), repr(str(node.program))))
    program = executable(node.root / "fake-reboot", FAKE_REBOOT)
    node.expect = replace(node.expect, reboot_program=str(program))
    (node.root / "health.json").write_text(node.expect.to_json())
    node.kernel(XID79)
    node.run()
    env = {"PATH": f"{node.bin}:/usr/bin:/bin", "NODE": str(node.root), "SLURMD_NODENAME": "gpu01",
           "CLUSTERFORGE_HEALTH_EXPECT": str(node.root / "health.json"),
           "CLUSTERFORGE_HEALTH_STATE": str(node.state_dir), "CLUSTERFORGE_HEALTH_KMSG": str(node.kmsg),
           "CLUSTERFORGE_HEALTH_BOOT_ID": str(node.boot_id), **node.evidence_env, **node.controller_env}
    done = subprocess.run([str(launched), "h100"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3, done.stdout + done.stderr
    assert (node.root / "rebooted-with").read_text() == "h100\n"
    assert len(kept(node)) == 1


def test_the_test_clusters_reboot_program_still_reboots_through_the_wrapper(node):
    machine = node.root / "machine"
    (machine / "run" / "clusterforge-testbed").mkdir(parents=True)
    (machine / "run" / "clusterforge-testbed" / "kernel-records").write_text("4,1,1000,-;old record\n")
    executable(node.bin / "systemd-run", '#!/bin/sh\necho "systemd-run $*" >> "$NODE/systemd-run-calls"\n')
    node.expect = replace(node.expect, reboot_program=str(REPO / "testbed" / "reboot"))
    node.kernel(XID79)
    node.run()
    done = node.run("reboot", CLUSTERFORGE_TESTBED_ROOT=str(machine))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (node.root / "systemd-run-calls").read_text().endswith("/usr/bin/systemctl restart slurmd\n")
    assert (machine / "run" / "clusterforge-testbed" / "kernel-records").read_text() == ""   # a new boot
    assert re.fullmatch(r"[0-9a-f-]{36}\n", (machine / "run" / "clusterforge-testbed" / "boot-id").read_text())
    assert len(kept(node)) == 1


# The keeping itself, in-process: its bounds.

FAULT = Finding(parse_reason("cf:gpu:xid79 gpu3 0000:5d:00 the GPU fell off the bus: reboot"), sticky=True,
                until="reboot", bus="0000:5d:00")


@pytest.fixture
def here(tmp_path, monkeypatch):
    """This process as the node: the stand-ins first on PATH, the evidence and the counters in tmp_path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "nvidia-bug-report.sh", BUG_REPORT)
    executable(bin_dir / "journalctl", "#!/bin/sh\necho kernel: booted\n")
    (tmp_path / "smi.txt").write_text("GPU 00000000:5D:00.0\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("NODE", str(tmp_path))
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_EVIDENCE", str(tmp_path / "evidence"))
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_SYS_INFINIBAND", str(tmp_path / "sys-infiniband"))
    return tmp_path


def test_a_bug_report_past_its_bound_is_killed_and_run_again_in_its_safe_mode(here, monkeypatch):
    monkeypatch.setattr(evidence, "BUG_REPORT_TIMEOUT_S", 1)
    (here / "bug-report-hangs").touch()
    path = Path(evidence.keep(Expectations(node="gpu01"), commands.run, [FAULT], "reboot"))
    with gzip.open(path / "nvidia-bug-report.log.gz", "rt") as report:
        assert report.readline() == "nvidia-bug-report.sh stand-in, safe mode\n"
    assert ("nvidia-bug-report.sh gave no answer in time; then in its safe mode: done"
            in (path / "reason.txt").read_text())


def test_without_nvidia_bug_report_or_a_journal_the_rest_is_kept_and_what_is_missing_said(here, tmp_path):
    (here / "bin" / "nvidia-bug-report.sh").unlink()
    executable(here / "bin" / "journalctl", "#!/bin/sh\necho 'No journal files were found.' >&2; exit 1\n")
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("4,1,1000,-;NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.\n")
    os.environ["CLUSTERFORGE_HEALTH_KMSG"] = str(kmsg)
    try:
        path = Path(evidence.keep(Expectations(node="gpu01"), commands.run, [FAULT], "reboot"))
    finally:
        del os.environ["CLUSTERFORGE_HEALTH_KMSG"]
    reason = (path / "reason.txt").read_text()
    assert "no nvidia-bug-report.sh on this node: no NVIDIA bug report" in reason
    assert "journalctl -k -b exit 1: No journal files were found.: the kernel's own buffer instead" in reason
    assert f"no InfiniBand port counters under {here / 'sys-infiniband'}" in reason
    assert "Xid (PCI:0000:5d:00): 79" in (path / "kernel.log").read_text()
    assert sorted(p.name for p in path.iterdir()) == ["ib-counters.txt", "kernel.log", "reason.txt"]


def test_the_kernel_log_keeps_its_newest_part_and_a_bug_report_too_large_is_not_kept(here, monkeypatch):
    executable(here / "bin" / "journalctl", "#!/bin/sh\nseq 1 100000\n")
    monkeypatch.setattr(evidence, "MAX_LOG_BYTES", 1000)
    monkeypatch.setattr(evidence, "MAX_BUG_REPORT_BYTES", 10)
    path = Path(evidence.keep(Expectations(node="gpu01"), commands.run, [FAULT], "reboot"))
    log = (path / "kernel.log").read_text()
    assert len(log) == 1000 and log.endswith("99999\n100000\n")
    assert not (path / "nvidia-bug-report.log.gz").exists()
    assert "nvidia-bug-report.log.gz over 0 MiB, not kept" in (path / "reason.txt").read_text()


def test_past_the_count_kept_the_oldest_directories_go(here):
    base = here / "evidence"
    old = [base / f"2026010{n}T000000Z-xid79-gpu3-reboot" for n in range(1, 10)]
    others = [base / "notes", base / "20261231T000000Z.txt"]
    for directory in old:
        directory.mkdir(parents=True)
    others[0].mkdir()
    others[1].write_text("an admin's file")
    for _ in range(evidence.KEPT - len(old)):
        evidence.keep(Expectations(node="gpu01"), commands.run, [FAULT], "reboot")
    assert all(d.exists() for d in old)
    newest = Path(evidence.keep(Expectations(node="gpu01"), commands.run, [FAULT], "reboot"))
    assert not old[0].exists() and all(d.exists() for d in old[1:]) and newest.exists()
    assert all(p.exists() for p in others)   # not ours: never removed
    assert len([d for d in base.iterdir() if d.name[:1] == "2" and d.is_dir()]) == evidence.KEPT


def test_the_wrapper_reboots_with_the_default_program_where_the_expectations_cannot_be_read(here, monkeypatch):
    ran = []
    monkeypatch.setattr(os, "execv", lambda path, argv: ran.append(argv))
    assert reboot.reboot(str(here / "no-such.json"), commands.run, str(here / "state"), ["x"]) == 1
    assert ran == [["/bin/sh", "-c", '/usr/sbin/reboot "$@"', "/usr/sbin/reboot", "x"]]
    assert not (here / "evidence").exists()
