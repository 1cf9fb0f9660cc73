"""What slurmctld does to a node on its own, asked by no command: its own drain (a step that would not die), a node
that stops answering and one that answers again. For a test that plays a node's life around a program that reads
and changes it (tests/health/test_interleavings.py). Each as node_mgr.c and ping_nodes.c do it; the reason is
SlurmUser's, as scontrol prints it after the reason ("[slurm@...]")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import cluster

if TYPE_CHECKING:
    from .slurm import Slurm

SLURM_USER = "slurm"
NOT_RESPONDING = "Not responding"


def _by_slurm(slurm: Slurm) -> str:
    return f"{SLURM_USER}@{cluster.stamp(slurm.now)}"


def drained_by_slurm(slurm: Slurm, name: str, reason: str) -> None:
    """slurmctld drains the node itself, as for "Kill task failed" (node_mgr.c, drain_nodes and _drain_node): nothing
    where it is drained already; the reason set where there is none or only "Not responding"."""
    node = slurm.nodes[name]
    if "DRAIN" in node.flags:
        return
    node.flags.add("DRAIN")
    if not node.reason or node.reason.startswith(NOT_RESPONDING):
        node.reason, node.reason_by = reason, _by_slurm(slurm)


def not_responding(slurm: Slurm, name: str) -> None:
    """The node answers no ping past SlurmdTimeout (ping_nodes.c, ping_end: a node not DOWN already): NOT_RESPONDING
    and DOWN (node_mgr.c, set_node_down_ptr), "Not responding" appended to a reason already there (set_node_reason:
    "<reason> : Not responding"), its jobs ended (kill_running_job_by_node_ptr)."""
    node = slurm.nodes[name]
    if node.base == "DOWN":
        return
    if not node.reason:
        node.reason = NOT_RESPONDING
    elif f" : {NOT_RESPONDING}" not in node.reason:
        node.reason += f" : {NOT_RESPONDING}"
    node.reason_by = _by_slurm(slurm)
    node.base = "DOWN"
    node.flags.add("NOT_RESPONDING")
    for job in slurm.running_on(name):
        job.state, job.exit_code, job.ended = "NODE_FAIL", "0:0", slurm.now


def responding(slurm: Slurm, name: str, return_to_service: int = 2) -> None:
    """The node answers again (node_mgr.c, _node_did_resp): NOT_RESPONDING goes; a DOWN node is back in service with
    ReturnToService=2 (clusterforge's, model/settings.py), with 1 only where the reason is "Not responding"; its
    reason goes unless it is drained or failing (clusteracct_storage_g_node_up)."""
    node = slurm.nodes[name]
    node.flags.discard("NOT_RESPONDING")
    if node.base == "DOWN" and (return_to_service == 2 or node.reason == NOT_RESPONDING):
        node.base = "IDLE"
        slurm._clear_reason(node)
