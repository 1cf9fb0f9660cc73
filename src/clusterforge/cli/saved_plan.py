"""A saved plan, terraform's way: `clusterforge plan --out FILE` keeps the plan the admin read, and `clusterforge apply
FILE` makes those changes only. Just before the deploy, the hosts are planned again; a host whose plan differs from
the saved one (its state changed, or the inventory did) is named and nothing is changed anywhere. The file holds what
`plan --json` shows (no secret: a file with one is only "changed") and how to run the deploy again: the inventory,
the hosts of --limit, the deploy file and the clusterforge that planned it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import ClusterforgeError

KIND = "clusterforge saved plan"
LAYOUT = 1
# What the deploy would do, host by host and before its operations; not what it would only say (notes) or who has
# jobs where (drain_jobs), which change by themselves and change nothing the deploy does.
_COMPARED = ("drain", "first")


@dataclass(frozen=True)
class SavedPlan:
    path: str
    inventory: str
    hosts: list[str] | None  # --limit's hosts; None: every host
    deploy: str
    version: str
    body: dict[str, Any]  # the plan, as the planning run wrote it


def write(out: str, inventory: str, hosts: list[str] | None, deploy: str, text: str) -> None:
    saved = {"kind": KIND, "layout": LAYOUT, "clusterforge": __version__, "inventory": os.path.abspath(inventory),
             "hosts": hosts, "deploy": os.path.abspath(deploy), "plan": json.loads(text)}
    # Only its owner reads it: it shows the cluster's configuration, diffs and all.
    descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(saved, file, indent=1, sort_keys=True)


def read(path: str) -> SavedPlan | None:
    """The saved plan at ``path``; None where the file is no saved plan (an inventory, say)."""
    try:
        with open(path, encoding="utf-8") as file:
            if file.read(1) != "{":
                return None
            found = json.loads("{" + file.read())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(found, dict) or found.get("kind") != KIND:
        return None
    if found.get("layout") != LAYOUT:
        raise ClusterforgeError(f"{path}: a saved plan of layout {found.get('layout')}, this clusterforge reads "
                                f"{LAYOUT}: plan again")
    return SavedPlan(path, found["inventory"], found["hosts"], found["deploy"], found["clusterforge"], found["plan"])


def refuse_stale(saved: SavedPlan) -> None:
    """Refuses a plan another clusterforge made, or one whose files are gone."""
    if saved.version != __version__:
        raise ClusterforgeError(f"{saved.path}: planned by clusterforge {saved.version}, this is {__version__}: "
                                "plan again with this one")
    for what, path in (("inventory", saved.inventory), ("deploy file", saved.deploy)):
        if not Path(path).is_file():
            raise ClusterforgeError(f"{saved.path}: its {what} {path} is gone")


def drifted(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What no longer holds: each host whose plan now differs from the saved one, or that was not planned now,
    and the deploy's steps before its operations where they differ."""
    hosts = saved.get("hosts", {})
    found = [host for host in sorted(set(saved.get("planned", [])) | set(now.get("planned", [])))
             if host not in now.get("planned", []) or hosts.get(host, []) != now.get("hosts", {}).get(host, [])]
    found += [f"the {key} before the deploy" for key in _COMPARED if saved.get(key) != now.get(key)]
    return found
