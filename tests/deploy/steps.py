"""The deploy's steps as deploy/cluster.py orders them, and what they manage together on a host (their footprints).

deploy/cluster.py is a pyinfra deploy file: past its list of steps it needs pyinfra's run. Its head (the imports
and its order) is plain Python, run here on its own."""

from __future__ import annotations

from pathlib import Path

from clusterforge.engine.footprint import Footprint, union
from clusterforge.engine.run import Step, steps_of
from clusterforge.model import ValidCluster

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "cluster.py"


def deploy_steps() -> tuple[Step, ...]:
    source = DEPLOY.read_text()
    scope: dict = {}
    exec(compile(source[:source.index("\nrun = ")], str(DEPLOY), "exec"), scope)  # noqa: S102 - the project's file
    return steps_of(scope["order"])


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """What the deploy manages on a host in ``groups``, as the run reads it (DeployRun.footprint)."""
    declared = dict.fromkeys(s.footprint for s in deploy_steps() if s.footprint is not None)
    return union(each(valid, groups) for each in declared)
