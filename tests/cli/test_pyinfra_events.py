"""What pyinfra's runs tell the commands through its API (engine/events.py), never its printed text, on real
connections: a port that answers HTTP (paramiko logs a traceback a host there), and a real sshd (tests/reach/sshd.py)
that runs a deploy of the tests' own (three_steps_deploy.py: an operation that changes something, one that does
not, one that fails on login01 with apt's words). `plan` says each host in reach/failures.py's words; `apply` says
each phase, each host's connection and end (its changes, or where it failed and why) and a summary line, and keeps
pyinfra's own text in a log it names when something failed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from golden_cases import prod_edited
from reach.sides import answering_http
from reach.sshd import Sshd, running

from clusterforge.cli.pyinfra_run import pyinfra_command, pyinfra_failure, run_pyinfra

DEPLOY = Path(__file__).with_name("three_steps_deploy.py")
HOSTS = ("slurm-ctl01", "login01", "slurm-db01")
FAILED = "login01: failed at installs slurmd after 1 change: E: Version '1.2' for 'slurmd' was not found"
# pyinfra's own text: its phase lines and its table of results.
PYINFRAS = ("--> ", "Grand total", "Starting operation")


@pytest.fixture
def http_port() -> Iterator[int]:
    with answering_http() as port:
        yield port


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with running(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def inventory(directory: Path, port: int, key: Path | None = None) -> Path:
    extra = f', ssh_key="{key}"' if key else ""
    return prod_edited(directory, ('host_groups(cluster, ssh_user="root")',
                                   f'host_groups(cluster, ssh_user="root", ssh_hostname="127.0.0.1", ssh_port={port}'
                                   f'{extra})'))


def environment(directory: Path, **extra: str) -> dict[str, str]:
    home = directory / "home"
    home.mkdir(exist_ok=True)
    # PYTHONPATH: the clusterforge under test, where it is not the one installed.
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), **extra,
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {})}


def clusterforge(directory: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterforge.cli", *args], cwd=directory, capture_output=True,
                          text=True, timeout=300, env=environment(directory, **env))


def test_plan_names_each_host_from_pyinfras_exception(tmp_path, http_port):
    path = inventory(tmp_path, http_port)
    said = clusterforge(tmp_path, "plan", "--limit", "slurm-ctl01,login01", path.name)
    assert said.returncode == 1
    first, *hosts, last = said.stderr.splitlines()
    assert (first, last) == ("plan: connecting to 2 hosts",
                             "Error: no host could be reached, nothing was planned: login01, slurm-ctl01")
    assert sorted(hosts) == [f"plan: {host}: 127.0.0.1 port {http_port} does not speak SSH: check ssh_port in the "
                             "inventory, and that sshd listens there" for host in ("login01", "slurm-ctl01")]


def test_apply_says_each_host_not_reached_in_one_line_and_no_traceback(tmp_path, http_port):
    path = inventory(tmp_path, http_port)
    said = clusterforge(tmp_path, "apply", "-y", "--limit", "slurm-ctl01,login01", path.name)
    assert said.returncode == 1, said.stdout + said.stderr
    lines = said.stdout.splitlines()
    assert lines[0] == "apply: connecting to 2 hosts"
    assert sorted(lines[1:3]) == [f"apply: {host}: 127.0.0.1 port {http_port} does not speak SSH: check ssh_port in "
                                  "the inventory, and that sshd listens there" for host in ("login01", "slurm-ctl01")]
    assert lines[3] == "apply: 2 hosts, 0 changes, 0 failed, 2 not reached"
    assert lines[-1].startswith("apply: pyinfra's own output: ") and said.stderr == ""
    output = said.stdout + said.stderr
    assert "Traceback" not in output and "paramiko" not in output and "SSH error" not in output, output


def test_apply_says_each_phase_each_hosts_end_and_a_summary_and_keeps_pyinfras_text_in_a_log(tmp_path, sshd):
    path = inventory(tmp_path, sshd.port, sshd.key)
    said = clusterforge(tmp_path, "apply", "-y", "--limit", ",".join(HOSTS), "--deploy", str(DEPLOY), path.name)
    assert said.returncode == 1, said.stdout + said.stderr
    lines = said.stdout.splitlines()
    assert lines[0] == "apply: connecting to 3 hosts"
    assert sorted(lines[1:4]) == [f"apply: {host}: connected" for host in sorted(HOSTS)]
    assert lines[4:6] == [f"apply: preparing 3 hosts with the deploy file {DEPLOY}", "apply: changing 3 hosts"]
    # Each host's end: its changes by name, or the operation it failed at, with the failed command's error output
    # (apt's "E:" line on stderr, not its progress on stdout).
    assert sorted(lines[6:9]) == sorted([f"apply: {FAILED}", "apply: slurm-ctl01: done, 1 change: touches a file",
                                         "apply: slurm-db01: done, 1 change: touches a file"])
    assert lines[9:11] == ["apply: 3 hosts, 3 changes, 1 failed, 0 not reached",
                           "apply: fix these hosts and run the deploy again: nothing they owe is lost"]
    assert lines[11].startswith("apply: pyinfra's own output: ") and len(lines) == 12 and said.stderr == ""
    assert not any(text in said.stdout for text in (*PYINFRAS, "Reading package lists", "ARGUMENT-MARKER"))
    log = Path(lines[11].split(": ", 2)[2])
    assert log.parent == tmp_path / "home" / ".local" / "state" / "clusterforge"
    assert log.stat().st_mode & 0o777 == 0o600
    kept = log.read_text()
    assert all(text in kept for text in (*PYINFRAS, "Reading package lists...", "E: Version '1.2'"))
    assert "ARGUMENT-MARKER" not in kept  # pyinfra prints a command only from -vv


def test_apply_v_shows_pyinfras_own_text_too(tmp_path, sshd):
    path = inventory(tmp_path, sshd.port, sshd.key)
    said = clusterforge(tmp_path, "apply", "-y", "-vv", "--limit", "slurm-ctl01", "--deploy", str(DEPLOY), path.name,
                        XDG_STATE_HOME=str(tmp_path / "state"))
    assert said.returncode == 0, said.stdout + said.stderr
    assert said.stdout.splitlines()[-1] == "apply: 1 host, 1 change, 0 failed, 0 not reached"
    assert all(text in said.stderr for text in PYINFRAS) and "touch /tmp/clusterforge-test-touched" in said.stderr
    assert not any(text in said.stdout for text in PYINFRAS)
    assert "pyinfra's own output" not in said.stdout and [p.name for p in (tmp_path / "state").iterdir()] == [
        "clusterforge"]


def test_the_events_name_operations_and_carry_error_output_never_an_operations_command(tmp_path, sshd):
    path = inventory(tmp_path, sshd.port, sshd.key)
    events: list[dict] = []
    printed: list[str] = []
    env = environment(tmp_path)
    (Path(env["HOME"]) / ".ssh").mkdir(mode=0o700)  # as apply makes it (reach/known_hosts.py)
    (Path(env["HOME"]) / ".ssh" / "known_hosts").touch()
    # At -vv pyinfra prints each command: its text has the command's marker, no event has.
    run = run_pyinfra(pyinfra_command("-y", "-vv", "--limit", "login01", str(path), str(DEPLOY)),
                      env, on_event=lambda event, so_far: events.append(dict(event)),
                      text=printed.append)
    assert run.returncode == 1 and any("ARGUMENT-MARKER" in line for line in printed)
    assert "ARGUMENT-MARKER" not in json.dumps(events)
    assert [e["event"] for e in events] == ["phase", "connected", "phase", "phase", "failed", "said"]
    assert [e.get("phase") for e in events if e["event"] == "phase"] == ["connecting", "preparing", "changing"]
    assert events[-2:] == [{"event": "failed", "host": "login01", "operation": "installs slurmd",
                            "cause": ["E: Version '1.2' for 'slurmd' was not found"], "changed": ["touches a file"]},
                           {"event": "said", "text": "pyinfra error: No hosts remaining!"}]  # its word on the run
    # What roll and plan say of a failed run, from the same events.
    assert pyinfra_failure(run) == [FAILED]


def test_a_host_whose_state_cannot_be_read_is_named_with_why_and_the_others_go_on(tmp_path, sshd):
    path = inventory(tmp_path, sshd.port, sshd.key)
    reading = tmp_path / "reading.py"
    reading.write_text("from pyinfra import host\nfrom pyinfra.facts.server import Command\n"
                       "from pyinfra.operations import server\n"
                       "if host.name == 'login01':\n"
                       "    host.get_fact(Command, command='echo the state cannot be read here >&2; exit 2')\n"
                       "server.shell(name='touches a file', commands=['touch /tmp/clusterforge-test-touched'])\n")
    said = clusterforge(tmp_path, "apply", "-y", "--limit", "slurm-ctl01,login01", "--deploy", str(reading),
                        path.name)
    assert said.returncode == 1, said.stdout + said.stderr
    lines = said.stdout.splitlines()
    assert lines[3:7] == [f"apply: preparing 2 hosts with the deploy file {reading}",
                          "apply: login01: failed while it was prepared: the state cannot be read here",
                          "apply: changing 1 host", "apply: slurm-ctl01: done, 1 change: touches a file"], lines
    assert lines[7] == "apply: 2 hosts, 1 change, 1 failed, 0 not reached"


def test_a_deploy_file_that_raises_is_named_with_pyinfras_word_on_it(tmp_path, sshd):
    path = inventory(tmp_path, sshd.port, sshd.key)
    raising = tmp_path / "raising.py"
    raising.write_text("from clusterforge.errors import ClusterforgeError, for_pyinfra\n"
                       "raise for_pyinfra(ClusterforgeError('the hosts cannot be what the inventory says'))\n")
    said = clusterforge(tmp_path, "apply", "-y", "--limit", "slurm-ctl01", "--deploy", str(raising), path.name)
    assert said.returncode == 1, said.stdout + said.stderr
    assert said.stderr == (f"Error: the deploy stopped: pyinfra error in {raising} line 2: the hosts cannot be what "
                           "the inventory says\n")
    assert said.stdout.splitlines()[-2:-1] == ["apply: 1 host, 0 changes, 0 failed, 0 not reached"]


def test_apply_interrupted_waits_for_pyinfra_and_exits_130(tmp_path, sshd):
    """Ctrl-C reaches apply and pyinfra alike (the terminal's process group): apply outlives pyinfra's end."""
    path = inventory(tmp_path, sshd.port, sshd.key)
    process = subprocess.Popen([sys.executable, "-m", "clusterforge.cli", "apply", "-y", "--limit", "slurm-ctl01",
                                "--deploy", str(DEPLOY), path.name], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               env=environment(tmp_path, CLUSTERFORGE_TEST_SLEEP="5"))
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("apply: changing"):
            time.sleep(1)  # into the operation that sleeps
            os.killpg(process.pid, signal.SIGINT)
    assert process.wait(timeout=60) == 130, "\n".join(lines) + (process.stderr.read() if process.stderr else "")
    # pyinfra lets the operation under way end: the host is said interrupted, with what changed.
    assert lines[-4:-1] == ["apply: slurm-ctl01: interrupted, 1 change: sleeps",
                            "apply: 1 host, 1 change, 0 failed, 0 not reached",
                            "apply: interrupted. What changed so far stays changed; every restart or reconfigure it "
                            "owes is still owed, and the next deploy makes it"], lines
    assert lines[-1].startswith("apply: pyinfra's own output: ")
