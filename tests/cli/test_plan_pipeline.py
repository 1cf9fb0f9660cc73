"""`clusterforge plan`'s exit statuses as a pipeline written for terraform reads them, and its progress on stderr:
the real plan command, run on simulated hosts (tests/deploy/simhost.py) by a shell script that knows only
terraform's codes (0 no changes, 1 error, 2 changes with -detailed-exitcode; 0 or 1 without it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from deploy.fakedeploy import FIVE_NODES, NEW_PARTITION, SimCluster, dump

CLUSTERFORGE = str(Path(sys.executable).with_name("clusterforge"))

# What a CI job written for `terraform plan -detailed-exitcode` does with the status.
DETAILED = r"""
"$CLUSTERFORGE" plan --detailed-exitcode "$@" >plan.out 2>plan.err
status=$?
case $status in
  0) echo "up to date" ;;
  2) echo "changes: apply them" ;;
  *) echo "plan failed ($status): stop" ;;
esac
"""
# And one written for plain `terraform plan` under set -e: any status but 0 stops it.
PLAIN = r"""
set -e
"$CLUSTERFORGE" plan "$@" >plan.out 2>plan.err
echo "planned, going on"
"""


def pipeline(cluster: SimCluster, script: str, *args: str) -> str:
    run = cluster._run(["env", f"CLUSTERFORGE={CLUSTERFORGE}", "bash", "-c", script, "pipeline", *args,
                        str(cluster.directory / "hosts.py")], "", 300)
    assert all(not sim.events for sim in run.sims.values()), "a plan changed a host"
    return run.output.strip()


@pytest.fixture
def cluster(tmp_path) -> SimCluster:
    sim = SimCluster(tmp_path / "sim", version="24.11", auth="slurm")
    deployed = sim.deploy()
    assert deployed.returncode == 0, dump(deployed)
    return sim


def unreachable_gpu05(cluster: SimCluster) -> None:
    """gpu05 joins the inventory as a real SSH host that refuses connections; the others stay simulated."""
    cluster.set_inventory("24.11", "slurm", FIVE_NODES)
    hosts = cluster.directory / "hosts.py"
    hosts.write_text(hosts.read_text() + '\ncompute = [("gpu05", {**data, "ssh_hostname": "127.0.0.1", "ssh_port": 1})'
                                         ' if name == "@fake/gpu05" else (name, data) for name, data in compute]\n')


def test_a_deployed_cluster_is_up_to_date_for_both_pipelines(cluster):
    assert pipeline(cluster, DETAILED) == "up to date"
    assert pipeline(cluster, PLAIN) == "planned, going on"


def test_changes_are_2_with_detailed_exitcode_and_success_without(cluster):
    cluster.set_inventory("24.11", "slurm", NEW_PARTITION)
    assert pipeline(cluster, DETAILED) == "changes: apply them"
    assert "+PartitionName=short" in (cluster.directory / "plan.out").read_text()
    assert pipeline(cluster, PLAIN) == "planned, going on"


@pytest.mark.parametrize("mistake", ["bad inventory", "unknown option", "missing deploy file", "deploy error",
                                     "unreachable host"])
def test_every_error_is_1_never_read_as_changes(cluster, mistake):
    args: tuple[str, ...] = ()
    if mistake == "bad inventory":
        cluster.set_inventory("24.11", "slurm", 'partitions=(Partition("x", profiles=("nope",)),)')
    elif mistake == "unknown option":
        args = ("--detailed-exit-code",)
    elif mistake == "missing deploy file":
        args = ("--deploy", "/nonexistent/cluster.py")
    elif mistake == "deploy error":
        cluster.set_inventory("22.05", "munge")  # the hosts run 24.11: the deploy refuses the move
    else:
        unreachable_gpu05(cluster)
    assert pipeline(cluster, DETAILED, *args) == "plan failed (1): stop"
    said = (cluster.directory / "plan.err").read_text()
    assert "Traceback" not in said and said.strip(), said
    assert pipeline(cluster, PLAIN, *args) == ""  # set -e stopped it


def test_each_host_is_reported_on_stderr_as_it_is_read_and_planned_and_json_stays_clean(cluster):
    assert pipeline(cluster, DETAILED, "--json") == "up to date"
    body = json.loads((cluster.directory / "plan.out").read_text())
    assert body["schema"] == 1
    assert body["planned"] == ["ctl", "gpu01", "gpu02", "gpu03", "gpu04", "login1"]
    assert body["unreachable"] == [] and body["unreachable_reasons"] == {}
    progress = (cluster.directory / "plan.err").read_text().splitlines()
    for host in body["planned"]:
        assert progress.index(f"plan: {host}: connected, reading its state") < progress.index(f"plan: {host}: planned")
    assert progress[0] == f"plan: connecting to {len(body['planned'])} hosts"
    assert len(progress) == 1 + 2 * len(body["planned"]), progress


def test_an_unreachable_host_is_one_line_with_its_reason_and_the_rest_are_planned(cluster):
    unreachable_gpu05(cluster)
    assert pipeline(cluster, DETAILED) == "plan failed (1): stop"
    progress = (cluster.directory / "plan.err").read_text().splitlines()
    # As the operations say it (reach/failures.py): what happened, and what to check.
    reason = "connection refused by 127.0.0.1 port 1: check that sshd runs there, and ssh_port in the inventory"
    assert [line for line in progress if "gpu05" in line] == [f"plan: gpu05: {reason}"]
    assert all(line.startswith("plan: ") for line in progress), progress  # nothing of pyinfra's or paramiko's
    shown = (cluster.directory / "plan.out").read_text()
    assert f"gpu05: COULD NOT BE REACHED, not planned ({reason})" in shown
    assert "+10.9.1.5 gpu05" in shown  # the other hosts' /etc/hosts is still planned
    assert pipeline(cluster, DETAILED, "--json") == "plan failed (1): stop"
    body = json.loads((cluster.directory / "plan.out").read_text())
    assert body["unreachable"] == ["gpu05"] and body["unreachable_reasons"] == {"gpu05": reason}


def test_no_host_reached_is_one_error_naming_them_after_a_line_each(cluster):
    hosts = cluster.directory / "hosts.py"
    hosts.write_text(hosts.read_text() + '''
def _refusing(group):
    return [(name.removeprefix("@fake/"), {**data, "ssh_hostname": "127.0.0.1", "ssh_port": 1}) for name, data in group]
controller, compute, login, database, nfs, monitoring = map(_refusing, (controller, compute, login, database, nfs,
                                                                       monitoring))
''')
    assert pipeline(cluster, DETAILED) == "plan failed (1): stop"
    said = (cluster.directory / "plan.err").read_text().splitlines()
    names = ["ctl", "gpu01", "gpu02", "gpu03", "gpu04", "login1"]
    assert said[0] == "plan: connecting to 6 hosts"
    assert sorted(said[1:-1]) == [f"plan: {name}: connection refused by 127.0.0.1 port 1: check that sshd runs there, "
                                 "and ssh_port in the inventory" for name in names]
    assert said[-1] == f"Error: no host could be reached, nothing was planned: {', '.join(names)}"
