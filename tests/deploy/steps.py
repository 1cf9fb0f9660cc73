"""The deploy's steps as the deploy orders them (clusterforge/deploy/order.py, which deploy/cluster.py runs), and what
they manage together on a host (their footprints)."""

from __future__ import annotations

from clusterforge.deploy.order import order
from clusterforge.engine.footprint import Footprint, union
from clusterforge.engine.run import Step, steps_of
from clusterforge.model import ValidCluster


def deploy_steps() -> tuple[Step, ...]:
    return steps_of(order)


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """What the deploy manages on a host in ``groups``, as the run reads it (DeployRun.footprint)."""
    declared = dict.fromkeys(s.footprint for s in deploy_steps() if s.footprint is not None)
    return union(each(valid, groups) for each in declared)
