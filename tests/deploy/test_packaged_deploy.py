"""The deploy the package ships (clusterforge/deploy/cluster.py), run by `clusterforge apply`, against a clone's
deploy/cluster.py run by pyinfra: both are one call of the same order, so on simulated hosts (simhost.py) they make
the same changes in the same order, and apply hands its options through to pyinfra."""

from __future__ import annotations

import re
import sys

from deploy.fakedeploy import SimCluster, dump

from clusterforge.cli.pyinfra_run import DEPLOY


def apply(cluster: SimCluster, *args: str):
    return cluster._run([sys.executable, "-m", "clusterforge.cli", "apply", *args, str(cluster.directory / "hosts.py")],
                        "", 300)


def per_host(order: list[tuple[str, str]]) -> dict[str, list[str]]:
    commands: dict[str, list[str]] = {}
    for host, command in order:
        commands.setdefault(host, []).append(command)
    return commands


def test_the_packaged_deploy_is_in_the_package_and_not_the_clones_file():
    assert DEPLOY.is_file() and DEPLOY.parent.parent.name == "clusterforge"
    assert DEPLOY.parts[-3:] == ("clusterforge", "deploy", "cluster.py")


def test_apply_makes_the_changes_of_the_clones_deploy_in_the_same_order(tmp_path):
    from_clone = SimCluster(tmp_path / "clone").deploy()
    assert from_clone.returncode == 0, dump(from_clone)
    packaged = SimCluster(tmp_path / "packaged")
    dry = apply(packaged, "-y", "--dry")
    assert dry.returncode == 0, dump(dry)
    assert all(not sim.events for sim in dry.sims.values()), dump(dry)  # --dry is the plan: nothing changed
    # -v: pyinfra's own text shown beside apply's lines, its table of operations read below.
    applied = apply(packaged, "-y", "-v")
    assert applied.returncode == 0, dump(applied)
    assert re.search(r"^apply: \d+ hosts, \d+ changes, 0 failed, 0 not reached$", applied.output, re.M), dump(applied)
    # The hosts run each operation in parallel: the operations' order, and each host's commands in it, are the same.
    assert applied.operations() == from_clone.operations() and applied.operations()
    assert per_host(applied.order) == per_host(from_clone.order)
    limited = SimCluster(tmp_path / "limited")
    # The inventory's name: apply hands pyinfra the name it knows the host by (@fake/ctl here).
    only_ctl = apply(limited, "-y", "--limit", "ctl")
    assert only_ctl.returncode == 0 and {host for host, _ in only_ctl.order} == {"ctl"}, dump(only_ctl)
    again = apply(packaged, "-y")
    assert again.returncode == 0 and all(not sim.events for sim in again.sims.values()), dump(again)
