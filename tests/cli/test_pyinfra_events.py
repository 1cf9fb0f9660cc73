"""What pyinfra's runs tell the commands through its API (engine/events.py), on real connections that fail: a port
that answers HTTP, where paramiko logs a traceback a host. `plan` says each host in reach/failures.py's words, from
the exception pyinfra caught (not its printed text), and `apply`, which shows pyinfra's own output, shows no
traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from golden_cases import prod_edited
from reach.sides import answering_http

SMALL = ('Nodes("gpu-node-[001-008]", address="10.0.1.[1-8]"', 'Nodes("gpu-node-[001-002]", address="10.0.1.[1-2]"')


@pytest.fixture
def http_port() -> Iterator[int]:
    with answering_http() as port:
        yield port


def inventory(directory: Path, port: int) -> Path:
    return prod_edited(directory, ('host_groups(cluster, ssh_user="root")',
                                   f'host_groups(cluster, ssh_user="root", ssh_hostname="127.0.0.1", ssh_port={port})'))


def clusterforge(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = directory / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "clusterforge.cli", *args], cwd=directory, capture_output=True,
                          text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": str(home)})


def test_plan_names_each_host_from_pyinfras_exception(tmp_path, http_port):
    path = inventory(tmp_path, http_port)
    said = clusterforge(tmp_path, "plan", "--limit", "slurm-ctl01,login01", path.name)
    assert said.returncode == 1
    first, *hosts, last = said.stderr.splitlines()
    assert (first, last) == ("plan: connecting to 2 hosts",
                             "Error: no host could be reached, nothing was planned: login01, slurm-ctl01")
    assert sorted(hosts) == [f"plan: {host}: 127.0.0.1 port {http_port} does not speak SSH: check ssh_port in the "
                             "inventory, and that sshd listens there" for host in ("login01", "slurm-ctl01")]


def test_apply_shows_no_traceback_of_paramikos(tmp_path, http_port):
    path = inventory(tmp_path, http_port)
    said = clusterforge(tmp_path, "apply", "-y", "--limit", "slurm-ctl01,login01", path.name)
    output = said.stdout + said.stderr
    assert said.returncode == 1 and "SSH error (Error reading SSH protocol banner" in output, output
    assert "Traceback" not in output and "paramiko" not in output, output
