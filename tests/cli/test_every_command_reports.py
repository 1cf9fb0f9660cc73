"""Every command that reads an inventory reports its mistakes as `clusterforge validate` does: every problem at
once, each named by the entry's place in the cluster (not the class that failed first), and nothing else run; an
inventory that exposes no host to pyinfra is one of them, which `apply -y` once deployed to no host, exiting 0.
In this process (click's runner), as the commands share one loader: a command that loaded the inventory its own way
would stop at the first wrong type and name `Profile.sockets`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from golden_cases import prod_edited

from clusterforge.cli import cli

# A wrong type, a typo and a missing node, each in a different entry (tests/cli/test_validate.py's).
MISTAKES = (('Partition("debug", nodes="gpu-node-032", max_time=', 'Partition("debug", nodes="gpu-node-032", max_tme='),
            ("    sockets=2,", '    sockets="two",'),
            ('Partition("train", profiles=("dgx-h100",)', 'Partition("train", nodes="gpu-node-099", profiles=()'))

# The deploy apply would run: caught in every test (conftest.py), never run.
pytestmark = pytest.mark.usefixtures("deploys")

DUMP = Path(__file__).parents[1] / "fabric_import" / "dumps"

# Each command as an admin would type it on the broken inventory; plan exits 1 for every error (terraform's 2 is
# "changes pending").
COMMANDS = {
    "show": (["show"], 2), "hosts": (["hosts"], 2), "render": (["render", "--out", "out"], 2),
    "plan": (["plan"], 1), "apply": (["apply", "-y"], 2), "check": (["check"], 2),
    "secrets check": (["secrets", "check"], 2), "secrets init": (["secrets", "init"], 2),
    "secrets rotate": (["secrets", "rotate", "{inventory}", "munge-key"], 2),
    "roll": (["roll", "--reboot", "--dry-run"], 2), "accept": (["accept", "--dry-run"], 2),
    "admit": (["admit", "{inventory}", "gpu-node-001"], 2), "repair --bmcs": (["repair", "--bmcs"], 2),
    "fabric import": (["fabric", "import", str(DUMP / "prod.txt"), "--inventory", "{inventory}"], 2),
}


def run(tmp_path: Path, args: list[str]) -> tuple[int, str]:
    inventory = "broken.py"
    argv = [a.format(inventory=inventory) for a in args]
    if not any("{inventory}" in a for a in args):
        argv.append(inventory)
    result = CliRunner().invoke(cli, argv, prog_name="clusterforge")
    return result.exit_code, result.stderr


@pytest.fixture
def broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return prod_edited(tmp_path, *MISTAKES)


def test_validate_reports_three_problems_for_the_others_to_match(broken, tmp_path):
    code, err = run(tmp_path, ["validate"])
    assert code == 2 and err.splitlines()[0] == "Error: the inventory has 3 problems:"


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_each_command_reports_every_problem_as_validate_does(broken, tmp_path, command):
    args, status = COMMANDS[command]
    code, err = run(tmp_path, args)
    assert (code, err) == (status, run(tmp_path, ["validate"])[1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py"]  # nothing written, nothing run



HOSTLESS = ('controller, compute, login, database, nfs = host_groups(cluster, ssh_user="root")', "")


@pytest.mark.parametrize("command", ["validate", *COMMANDS], ids=["validate", *COMMANDS])
def test_an_inventory_that_exposes_no_host_is_refused_by_every_command(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    prod_edited(tmp_path, HOSTLESS)
    args, status = COMMANDS.get(command, (["validate"], 2))
    code, err = run(tmp_path, args)
    assert (code, err) == (status, "Error: broken.py: exposes no hosts to pyinfra: add `controller, compute, login, "
                                   "database, nfs = host_groups(cluster, ssh_user=...)`\n")
