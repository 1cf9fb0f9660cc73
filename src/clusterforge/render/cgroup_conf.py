"""cgroup.conf: the settings the resolved cluster holds for its release (model/settings.py decides them)."""

from __future__ import annotations

from ..model import ValidCluster
from .text import fill, header


def render(valid: ValidCluster) -> str:
    return fill("keyvalue.conf.j2", header=header(valid), settings=list(valid.cgroup_conf.items()))
