"""`--limit`, one grammar for every command: a Slurm hostlist of the inventory's host names and group names
(`gpu-node-[001-004],login`). A name the inventory does not have is a mistake (exit 2) naming it, never a limit
that quietly matches nothing: pyinfra's own --limit, a glob, deploys to no host and exits 0."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

import click

from ..errors import ClusterforgeError

if TYPE_CHECKING:
    from ..model import ValidCluster

GRAMMAR = "a hostlist of host and group names, e.g. gpu-node-[001-004],login"


def limit_option(what: str, then: str = "") -> Callable[[click.Command], click.Command]:
    """The --limit option, its help saying what it limits (``what``: "deploy to", "check", ...) and ``then``."""
    # Given again, the hostlists join: a repeated option that silently kept only its last value would deploy
    # to fewer hosts than the admin named.
    return click.option("--limit", metavar="HOSTS", multiple=True, callback=_joined,
                        help=f"{what} only these hosts ({GRAMMAR}; may be given again){then}")


def _joined(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> str | None:
    return ",".join(value) or None


def limited(limit: str | None, valid: ValidCluster, inventory: str, among: Collection[str] | None = None,
            kind: str = "hosts", argument: str = "--limit") -> list[str] | None:
    """The hosts a --limit names, in the inventory's order; None without one. A group name stands for its hosts.
    ``among``: the hosts the command can act on (the compute nodes, say), called ``kind`` when one is not;
    ``argument``: the option or argument that gave the hostlist, as the messages name it."""
    if not limit:
        return None
    from .. import hostlists

    try:
        named = hostlists.expand(limit)
    except hostlists.HostlistError as error:
        raise ClusterforgeError(f"{argument} {limit}: {error} ({GRAMMAR})") from None
    groups: dict[str, list[str]] = {}
    for machine in valid.machines:
        for group in machine.groups:
            groups.setdefault(group, []).append(machine.name)
    hosts = {m.name for m in valid.machines}
    chosen: set[str] = set()
    for name in named:
        chosen.update([name] if name in hosts else groups.get(name, [name]))
    unknown = chosen - hosts
    others = chosen - unknown - set(among) if among is not None else set()
    wrong = [f"not {what} of {inventory}: {hostlists.compress(sorted(names, key=hostlists.natural_key), valid.version)}"
             for what, names in (("hosts or groups", unknown), (kind, others)) if names]
    if wrong:
        raise ClusterforgeError(f"{argument}: " + "; ".join(wrong))
    return [m.name for m in valid.machines if m.name in chosen]
