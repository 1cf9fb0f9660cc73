"""Every remote command that waits on the network or on a daemon has a bound, and a timeout fails the operation
with a message that names the command and says it timed out.

The generated shell runs here, against stand-ins for apt-get and dpkg that hang where a test wants them to, with
the limits made small; nothing on this machine is installed or changed (policy-rc.d and the package lists are
redirected into a temporary directory)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import pytest

from clusterforge.engine import apt as apt_commands
from clusterforge.engine import facts, waits

FAKE = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CALLS"
case "$(basename "$0") $*" in
  *"$HANG"*) exec sleep 60;;
esac
exit "${FAIL:-0}"
"""


@pytest.fixture
def apt(tmp_path, monkeypatch):
    """Runs install_command() with stand-in apt-get/dpkg; returns (rc, stderr, calls)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("apt-get", "dpkg"):
        (bin_dir / name).write_text(FAKE)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "lists").mkdir()  # empty: the lists are stale, so apt-get update runs
    monkeypatch.setattr(apt_commands, "POLICY", str(tmp_path / "policy-rc.d"))
    monkeypatch.setattr(apt_commands, "LISTS", str(tmp_path / "lists"))
    for limit in ("UPDATE_TIMEOUT_S", "DOWNLOAD_TIMEOUT_S", "INSTALL_TIMEOUT_S"):
        monkeypatch.setattr(apt_commands, limit, 1)

    def run(packages_: list[str], hang: str = "never-matches", fail: int = 0):
        calls = tmp_path / "calls"
        calls.write_text("")
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls), "HANG": hang,
               "FAIL": str(fail)}
        done = subprocess.run(["sh", "-c", apt_commands.install_command(packages_)], env=env, capture_output=True,
                              text=True, timeout=60, check=False)
        assert not (tmp_path / "policy-rc.d").exists(), "the temporary policy-rc.d must be gone after the command"
        return done.returncode, done.stderr, calls.read_text().splitlines()

    return run


def test_every_apt_and_dpkg_step_runs_under_timeout():
    command = apt_commands.install_command(["slurmd", "munge"])
    steps = re.findall(r"(\S+ \S+ \S+ \S+) (apt-get|dpkg) ", command)
    assert [tool for _, tool in steps] == ["apt-get", "apt-get", "dpkg", "apt-get"]
    assert all(prefix.startswith("timeout -k ") for prefix, _ in steps), steps
    assert f"timeout -k 10 {apt_commands.UPDATE_TIMEOUT_S} apt-get update" in command
    assert f"timeout -k 10 {apt_commands.DOWNLOAD_TIMEOUT_S} apt-get install" in command
    assert "'apt-get update timed out after" in command
    assert "'apt-get install slurmd munge timed out after" in command


def test_apt_network_steps_give_up_on_a_silent_connection():
    command = apt_commands.install_command(["slurmd"])
    update, download = re.findall(r"\d apt-get (?:update|install [^;]*--download-only)[^;]*", command)
    for step in (update, download):
        assert f"-o Acquire::http::Timeout={apt_commands.NET_TIMEOUT_S}" in step
        assert "-o Acquire::Retries=" in step


def test_a_hanging_apt_get_update_fails_saying_it_timed_out(apt):
    started = time.monotonic()
    rc, stderr, calls = apt(["slurmd"], hang="apt-get update")
    assert rc != 0
    assert "apt-get update timed out after 1 s" in stderr
    assert time.monotonic() - started < 15
    assert [c.split()[:2] for c in calls] == [["apt-get", "update"]]  # nothing installed after it


def test_a_hanging_download_fails_naming_the_packages_and_leaves_dpkg_alone(apt):
    rc, stderr, calls = apt(["slurmd", "munge"], hang="--download-only")
    assert rc != 0
    assert "apt-get install --download-only slurmd munge timed out after 1 s" in stderr
    assert not any(c.startswith("dpkg") for c in calls)


def test_a_hanging_install_fails_saying_it_timed_out(apt):
    rc, stderr, _ = apt(["slurmd"], hang="--force-confold slurmd")
    assert rc != 0
    assert "apt-get install slurmd timed out after 1 s" in stderr


def test_an_install_that_finishes_in_time_runs_every_step_once(apt):
    rc, stderr, calls = apt(["slurmd", "munge"])
    assert rc == 0, stderr
    assert "timed out" not in stderr
    assert [c.split()[0] + (" update" if " update" in c else " --download-only" if "--download-only" in c
                            else "") for c in calls] == [
        "apt-get update", "apt-get --download-only", "dpkg", "apt-get"]
    assert calls[2] == "dpkg --configure -a"


def test_an_apt_failure_is_not_reported_as_a_timeout(apt):
    rc, stderr, calls = apt(["slurmd"], fail=100)
    assert rc == 100
    assert "timed out" not in stderr
    assert len(calls) == 1


def _sh(command: str) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stderr, time.monotonic() - started


def test_a_wait_on_a_check_that_hangs_ends_at_its_bound():
    rc, stderr, took = _sh(waits.until("sleep 600", "the daemon answers", timeout_s=2))
    assert rc == 1
    assert "timed out after 2 s waiting until the daemon answers (the check: sleep 600)" in stderr
    assert took < 2 + waits.CHECK_TIMEOUT_S


def test_each_try_of_a_wait_is_bounded(monkeypatch, tmp_path):
    monkeypatch.setattr(waits, "CHECK_TIMEOUT_S", 1)
    # The first try hangs; the next ones succeed at once: the wait ends after about one try's bound.
    marker = tmp_path / "tried"
    check = f"if [ -e {marker} ]; then true; else touch {marker}; sleep 600; fi"
    rc, stderr, took = _sh(waits.until(check, "x", timeout_s=30))
    assert rc == 0, stderr
    assert took < 10


def test_a_wait_that_succeeds_returns_at_once():
    rc, _, took = _sh(waits.until("true", "x", timeout_s=30))
    assert rc == 0
    assert took < 5


def test_a_slurmdbd_that_does_not_answer_is_named_not_taken_for_an_empty_database(tmp_path, monkeypatch):
    # Stand-ins: sacctmgr hangs on the QOS listing only, mysql answers; the limit is made small.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sacctmgr").write_text('#!/bin/sh\ncase "$*" in *"show qos"*) exec sleep 60;; esac\necho "vagrant|"\n')
    (bin_dir / "mysql").write_text("#!/bin/sh\necho '@db slurm_acct_db'\n")
    for tool in ("sacctmgr", "mysql"):
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setattr(facts, "LISTING_TIMEOUT_S", 1)
    command = facts.AccountingState().command(user="slurm", database="slurm_acct_db", cluster="vagrant")
    started = time.monotonic()
    done = subprocess.run(["sh", "-c", command], env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
                          capture_output=True, text=True, timeout=60, check=False)
    assert time.monotonic() - started < 15
    found = facts.AccountingState().process(done.stdout.splitlines())
    assert found.late == ["list-qos"]
    assert found.database and found.clusters == {"vagrant"}


def test_a_host_without_mysql_or_sacctmgr_is_not_late(tmp_path):
    # Where MariaDB and Slurm are not installed yet (a first deploy): nothing to read, and nothing is late. Only the
    # tools the command itself uses are on the PATH.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("timeout", "sed", "mktemp", "rm", "touch"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    command = facts.AccountingState().command(user="slurm", database="slurm_acct_db", cluster="vagrant")
    done = subprocess.run(["/bin/sh", "-c", command], env={"PATH": str(bin_dir)}, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    found = facts.AccountingState().process(done.stdout.splitlines())
    assert (found.late, found.database, found.clusters) == ([], False, set())
