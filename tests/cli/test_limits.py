"""`--limit` is one grammar for every command, a Slurm hostlist of the inventory's host and group names, and a name
the inventory lacks is a mistake named before any connection. pyinfra's own --limit is a glob: `apply --limit
'gpu-node-[001-004]'` on an inventory without those names deployed to no host and exited 0."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from golden_cases import PROD

from clusterforge.cli import cli

# The deploy apply would run: caught in every test (conftest.py), never run.
pytestmark = pytest.mark.usefixtures("deploys")

# Every command with a --limit (admit's HOSTS argument takes the same grammar), and its status for a mistake.
LIMITED = {
    "apply": (["apply", "-y"], 2), "plan": (["plan"], 1), "check": (["check"], 2),
    "roll": (["roll", "--reboot", "--dry-run"], 2), "accept": (["accept", "--dry-run"], 2),
}


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="clusterforge")
    return result.exit_code, result.stderr


@pytest.mark.parametrize("command", LIMITED)
def test_a_limit_naming_hosts_the_inventory_lacks_is_a_mistake_naming_them(command):
    args, status = LIMITED[command]
    code, err = invoke(*args, "--limit", "gpu-node-[031-034],gpu-nod-001", str(PROD))
    assert (code, err) == (status, f"Error: --limit: not hosts or groups of {PROD}: gpu-nod-001,gpu-node-[033-034]\n")


@pytest.mark.parametrize("command", LIMITED)
def test_a_glob_is_no_hostlist_and_is_named_as_a_mistake(command):
    args, status = LIMITED[command]
    code, err = invoke(*args, "--limit", "gpu-node-0*", str(PROD))
    assert (code, err) == (status, f"Error: --limit: not hosts or groups of {PROD}: gpu-node-0*\n")


def test_a_broken_hostlist_is_named_with_the_grammar():
    code, err = invoke("check", "--limit", "gpu-node-[001-004", str(PROD))
    assert code == 2
    assert err.startswith("Error: --limit gpu-node-[001-004: ") and "unbalanced brackets" in err
    assert err.rstrip().endswith("(a hostlist of host and group names, e.g. gpu-node-[001-004],login)")


@pytest.mark.parametrize(("command", "kind"), [("roll", "compute nodes"), ("accept", "nodes with admission")])
def test_a_command_on_compute_nodes_names_the_service_hosts_a_limit_gives_it(command, kind):
    args, status = LIMITED[command]
    code, err = invoke(*args, "--limit", "gpu-node-001,login", str(PROD))
    assert (code, err) == (status, f"Error: --limit: not {kind} of {PROD}: login[01-02]\n")


def test_admit_takes_the_same_grammar_for_its_hosts():
    code, err = invoke("admit", str(PROD), "compute,slurm-ctl01")
    assert (code, err) == (2, f"Error: HOSTS: not compute nodes of {PROD}: slurm-ctl01\n")


def test_apply_hands_pyinfra_exactly_the_hosts_of_the_hostlist_and_groups_given_again(deploys):
    code, err = invoke("apply", "-y", "--limit", "gpu-node-[002-003]", "--limit", "login,gpu-node-001",
                       str(PROD))
    assert (code, err) == (0, "")
    argv = deploys[0]
    limits = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--limit"]
    # In the inventory's order, each host once: pyinfra matches each name to itself alone.
    assert limits == ["login01", "login02", "gpu-node-001", "gpu-node-002", "gpu-node-003"]


def test_apply_without_a_limit_hands_pyinfra_none(deploys):
    assert invoke("apply", "-y", str(PROD)) == (0, "")
    assert "--limit" not in deploys[0]
