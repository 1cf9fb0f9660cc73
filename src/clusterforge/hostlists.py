"""Slurm hostlist expressions: parsing with python-hostlist, compression written for Slurm's grammar.

python-hostlist parses exactly as Slurm does (zero-pad width = width of the low bound, several bracket groups,
suffixes), so expansion is delegated to it. Its compressor, though, may put text after the last bracket
(``a[1-2]b1``), which Slurm before 23.11 rejects as an invalid hostlist; the compressor here works on the last run
of digits only, as Slurm's own does, and writes a suffix form only where the release accepts it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import hostlist as _hostlist

from .versions import HOSTLIST_SUFFIX, SlurmVersion

_SPLIT = re.compile(r"^(.*?)(\d+)(\D*)$")


class HostlistError(ValueError):
    pass


def expand(expression: str) -> list[str]:
    """Every name of a hostlist expression, in order, duplicates kept (Slurm keeps them too)."""
    try:
        return _hostlist.expand_hostlist(expression, allow_duplicates=True)
    except _hostlist.BadHostlist as error:
        raise HostlistError(f"{expression!r} is not a valid hostlist: {error}") from None


@dataclass(frozen=True, slots=True)
class Numbered:
    """A name cut around its last run of digits: ``gpu-node-007`` is ("gpu-node-", "007", "")."""

    prefix: str
    digits: str
    suffix: str

    @property
    def number(self) -> int:
        return int(self.digits)


def split(name: str) -> Numbered | None:
    match = _SPLIT.match(name)
    return Numbered(*match.groups()) if match else None


def suffix_allowed(version: SlurmVersion) -> bool:
    """Text after the last bracket (``gpu[1-2]-ib``) is valid hostlist syntax from Slurm 23.11 on."""
    return version >= HOSTLIST_SUFFIX


def continues(run_start: Numbered, last: Numbered, candidate: Numbered) -> bool:
    """Whether candidate extends the bracket range run_start..last (same text around it, next number, same padding)."""
    return (
        candidate.number == last.number + 1
        and (candidate.prefix, candidate.suffix) == (run_start.prefix, run_start.suffix)
        and str(candidate.number).zfill(len(run_start.digits)) == candidate.digits
    )


def _bracket(prefix: str, ranges: Sequence[tuple[Numbered, Numbered]], suffix: str) -> str:
    parts = [a.digits if a is b else f"{a.digits}-{str(b.number).zfill(len(a.digits))}" for a, b in ranges]
    if len(parts) == 1 and "-" not in parts[0]:
        return f"{prefix}{parts[0]}{suffix}"
    return f"{prefix}[{','.join(parts)}]{suffix}"


def runs(items: Sequence[Numbered]) -> list[tuple[Numbered, Numbered]]:
    """Consecutive runs of names that share prefix and suffix, sorted by their first name.

    Differently padded names (n9, n09) may interleave, so several runs stay open at once, each keyed by the number
    it would take next.
    """
    done: list[tuple[Numbered, Numbered]] = []
    open_runs: dict[int, list[tuple[Numbered, Numbered]]] = {}
    for item in sorted(items, key=lambda n: (n.number, len(n.digits))):
        waiting = open_runs.get(item.number, [])
        for index, (start, last) in enumerate(waiting):
            if continues(start, last, item):
                del waiting[index]
                open_runs.setdefault(item.number + 1, []).append((start, item))
                break
        else:
            open_runs.setdefault(item.number + 1, []).append((item, item))
    for pending in open_runs.values():
        done.extend(pending)
    done.sort(key=lambda run: (run[0].number, len(run[0].digits)))
    return done


def compress(names: Iterable[str], version: SlurmVersion) -> str:
    """The shortest one-dimensional hostlist Slurm of this release parses back to exactly these names."""
    groups: dict[tuple[str, str], list[Numbered]] = {}
    literal: list[str] = []
    allow_suffix = suffix_allowed(version)
    for name in dict.fromkeys(names):
        parts = split(name)
        if parts is None or (parts.suffix and not allow_suffix):
            literal.append(name)
        else:
            groups.setdefault((parts.prefix, parts.suffix), []).append(parts)
    tokens = []
    for (prefix, suffix), items in sorted(groups.items()):
        tokens.append(_bracket(prefix, runs(items), suffix))
    tokens.extend(sorted(literal))
    return ",".join(tokens)


def natural_key(name: str) -> tuple[str, int, str, str]:
    """Sort key that puts gpu-node-9 before gpu-node-10."""
    parts = split(name)
    if parts is None:
        return (name, -1, "", name)
    return (parts.prefix, parts.number, parts.suffix, name)
