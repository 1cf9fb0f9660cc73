"""cgroup.conf: confine each job to its cores, memory and GPUs, with only keys the release accepts."""

from __future__ import annotations

from ..model import ValidCluster
from ..versions import v
from .text import apply_overrides, fill, header


def render(valid: ValidCluster) -> str:
    defaults = {
        "ConstrainCores": "yes",
        # Without it every job sees all eight GPUs of a node, whatever it asked for.
        "ConstrainDevices": "yes",
        "ConstrainRAMSpace": "yes",
        "ConstrainSwapSpace": "yes",
        "AllowedSwapSpace": "0",
    }
    if valid.version < v("22.05"):
        # 21.08 has no cgroup/v2 plugin and defaults to v1 anyway; CgroupAutomount is defunct from 23.11.
        defaults["CgroupPlugin"] = "cgroup/v1"
        defaults["CgroupAutomount"] = "yes"
    else:
        defaults["CgroupPlugin"] = "autodetect"
    return fill("keyvalue.conf.j2", header=header(valid), settings=apply_overrides(defaults, valid.cgroup_conf_extra))
