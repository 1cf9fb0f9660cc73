"""Rules for what depends on the Slurm release: the authentication plugin, and the slurm.conf and cgroup.conf keys an
inventory adds or removes (an unknown key makes the daemons exit at start)."""

from __future__ import annotations

from collections.abc import Mapping

from ...key_tables import SLURM_CONF_OWNED, KeyTable, cgroup_conf_keys, slurm_conf_keys
from ...versions import AUTH_SLURM
from ..base import closest
from ..settings import yes_no
from .check import Check


def release(check: Check) -> None:
    c = check.cluster
    if c.auth == "slurm" and check.version < AUTH_SLURM:
        check.add("auth", f"auth/slurm needs Slurm {AUTH_SLURM} or newer; this cluster runs {check.version}", c, "auth")


# With Rest the JWT keys are the inventory's (without, a site's own auth/jwt set up through slurm_conf_extra stays its).
REST_OWNED = {"AuthAltTypes": "rest", "AuthAltParameters": "rest"}


def slurm_conf_extra(check: Check) -> dict[str, str | None]:
    owned = {**SLURM_CONF_OWNED, **(REST_OWNED if check.cluster.rest is not None else {})}
    return _overrides(check, "slurm_conf_extra", check.cluster.slurm_conf_extra, slurm_conf_keys(check.version),
                      owned)


def cgroup_conf_extra(check: Check) -> dict[str, str | None]:
    return _overrides(check, "cgroup_conf_extra", check.cluster.cgroup_conf_extra, cgroup_conf_keys(check.version),
                      {})


def _overrides(check: Check, field: str, overrides: Mapping[str, object], table: KeyTable,
               owned: Mapping[str, str]) -> dict[str, str | None]:
    """The overrides in Slurm's spelling: a value as the file holds it, or None to remove a key."""
    out: dict[str, str | None] = {}
    for key, value in overrides.items():
        where = f"{field}[{key}]"

        def problem(message: str) -> None:
            check.add(where, message, check.cluster, field, key)  # noqa: B023 - used at once, inside the loop

        canonical = table.lookup(key)
        if canonical is None:
            close = closest(key, table.canonical.values(), cutoff=0.75)
            problem(f"not a {table.file} key in Slurm {check.version}: the daemons would refuse to start"
                    + (f"; did you mean {close}?" if close else ""))
        elif table.is_defunct(canonical):
            problem(f"defunct in Slurm {check.version}: Slurm ignores it, remove it")
        elif canonical in owned:
            problem(f"set by the inventory ({owned[canonical]}); change that instead")
        elif canonical in out:
            problem(f"given twice (also as {canonical})")
        elif value is None:
            out[canonical] = None
        elif isinstance(value, bool):
            out[canonical] = yes_no(value)
        elif not (text := str(value)) or "\n" in text or "#" in text:
            problem(f"{text!r} cannot be written on one line of {table.file}")
        else:
            out[canonical] = text
    return out
