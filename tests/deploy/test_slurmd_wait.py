"""The deploy's wait after slurmd (re)starts (roles/daemons.py, slurm/nodes.responding_command), on simulated hosts:
it passes once slurmctld has heard from the slurmd of this start, not from the one before. slurmctld holds a node
responding for up to SlurmdTimeout after its slurmd died, so a slurmd that exited right after its start (seen: 22.05's
slurmd refused "ConfigLess mode is disabled"), or whose registration slurmctld refused, passed the wait that asked
sinfo alone, and the deploy ended 0 with no slurmd on the node."""

from __future__ import annotations

import base64

import pytest
from deploy.fakedeploy import SimCluster, dump
from deploy.simhost import SLURMD_EXITS, SLURMD_REFUSED, Sim

from clusterforge.engine import ops
from clusterforge.engine.waits import TIMEOUT_S

NODE = "gpu01"
RECORD = ops.record_path("slurmd")
HOUR = 3600


def slurmd_owes_a_restart(cluster: SimCluster, fares: str = "") -> None:
    """NODE's slurmd owes a restart on the next run (its record names other inputs) and fares so from that start
    (simhost.SLURMD_*; "" registers); the slurmd running there now registered an hour ago."""
    path = cluster.directory / f"{NODE}.json"
    node = Sim.load(path)
    node.files[RECORD]["content"] = base64.b64encode(b"older inputs\n").decode()
    node.slurmd = fares
    node.save(path)
    path = cluster.directory / "ctl.json"
    ctl = Sim.load(path)
    with ctl.slurm_standin() as slurm:
        slurm.nodes[NODE].slurmd_start -= HOUR
    ctl.save(path)


def heard(cluster: SimCluster) -> tuple[int, set[str]]:
    """NODE as slurmctld holds it: the start its slurmd last registered with, and its flags."""
    with Sim.load(cluster.directory / "ctl.json").slurm_standin() as slurm:
        return slurm.nodes[NODE].slurmd_start, slurm.state_of(NODE)[1]


def record(run_sims: dict[str, Sim]) -> bytes:
    return base64.b64decode(run_sims[NODE].files[RECORD]["content"])


@pytest.mark.parametrize("fares", [SLURMD_EXITS, SLURMD_REFUSED])
def test_a_slurmd_slurmctld_never_hears_after_its_restart_fails_the_deploy_naming_the_node(cluster, fares):
    slurmd_owes_a_restart(cluster, fares)
    before, _ = heard(cluster)

    run = cluster.deploy()

    assert run.returncode != 0, dump(run)
    assert run.ran(NODE, "systemctl restart slurmd.service"), dump(run)
    assert (f"timed out after {TIMEOUT_S} s waiting until slurmctld hears the slurmd of this start on node {NODE} "
            "(slurmd.service active, registered since it started, responding)") in run.output, dump(run)
    # slurmctld still hears the node, from the slurmd before: what the wait asking sinfo alone let pass.
    assert heard(cluster) == (before, set()), heard(cluster)
    # Not recorded as running its inputs: the next run restarts it again. No other node was restarted.
    assert record(run.sims) == b"older inputs\n"
    assert [host for host, sim in run.sims.items() if any("restart slurmd" in e for e in sim.events)] == [NODE]


def test_a_restarted_slurmd_that_registers_passes_the_wait(cluster):
    slurmd_owes_a_restart(cluster)
    before, _ = heard(cluster)

    run = cluster.deploy()

    assert run.returncode == 0, dump(run)
    assert run.ran(NODE, "systemctl restart slurmd.service"), dump(run)
    started = int(run.sims[NODE].started["slurmd.service"])
    registered, flags = heard(cluster)
    assert registered >= started > before and flags == set(), (registered, started, before)
    assert record(run.sims) != b"older inputs\n"


def test_a_wait_that_fails_in_a_run_without_the_controller_says_the_controller_is_not_in_it(cluster):
    """A node deployed alone (--limit) whose slurmd slurmctld never hears: a new node's is so for certain, since
    slurmctld takes no node its slurm.conf does not name. The failure says the controller was not in the run."""
    slurmd_owes_a_restart(cluster, SLURMD_REFUSED)

    run = cluster.deploy("--limit", f"@fake/{NODE}")

    assert run.returncode != 0, dump(run)
    assert ("the controller ctl is not in this run (--limit, or it failed), and slurmctld takes no node its "
            "slurm.conf does not name: deploy a new node with the controller") in run.output, dump(run)
    whole = cluster.deploy()
    assert "is not in this run" not in whole.output, dump(whole)
