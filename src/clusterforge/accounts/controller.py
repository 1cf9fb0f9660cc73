"""Whether slurmctld lets each user the inventory declares submit, from what the controller itself holds.

slurmctld maps a job's uid to a user through the controller's user database (a directory or local accounts) and
keeps, per user of the accounting database, the uid it found and the default account. A user added to the database
before the controller can resolve the name is held without a uid; if slurmctld then restarts (a reboot, or the deploy
on Slurm 22.05 for a node added or removed), it loads the user without a default account either, and neither the
user's Unix account appearing nor a reconfigure brings the default account back: every job of that user is refused
with "Invalid account or account/partition combination specified". Pure: the deploy and `clusterforge check` read
the same two listings on the controller and ask this module what they mean.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from ..model import ValidCluster
from ..slurm import controller as slurm_controller

NO_UID = 4294967294  # Slurm's NO_VAL: the uid slurmctld records for a name it could not resolve
_HELD = re.compile(r"^UserName=(?P<name>[^(\s]+)\((?P<uid>\d+)\)\s+DefAccount=(?P<default>\S+)")
ORDER = ("create each person's Unix account (directory or local, the same uid on every host) before declaring "
         "them in the inventory, then run the deploy")


@dataclass(frozen=True, slots=True)
class Held:
    """What slurmctld holds for one user."""

    uid: int | None  # None: not resolved
    default_account: str | None


def declared_users(valid: ValidCluster) -> list[str]:
    return [user.name for user in valid.accounting.users] if valid.accounting is not None else []


def read_command(names: Iterable[str]) -> str:
    """One command on the controller: slurmctld's users, then the controller's user database, each line tagged."""
    names = list(names)
    return (f"{slurm_controller.users_command(names)} 2>/dev/null | "
            f"sed 's/^/@held /'; getent passwd {shlex.join(names)} | sed 's/^/@passwd /'; true")


def parse(lines: Iterable[str]) -> tuple[dict[str, Held], set[str]]:
    """(what slurmctld holds by user, the names the controller resolves) from ``read_command``'s output."""
    held: dict[str, Held] = {}
    unix: set[str] = set()
    for line in lines:
        tag, _, rest = line.strip().partition(" ")
        if tag == "@held" and (match := _HELD.match(rest.strip())):
            uid = int(match["uid"])
            default = match["default"]
            held[match["name"].lower()] = Held(None if uid == NO_UID else uid, None if default == "(null)" else default)
        elif tag == "@passwd" and ":" in rest:
            unix.add(rest.split(":", 1)[0])
    return held, unix


@dataclass(frozen=True, slots=True)
class UsersView:
    unknown: tuple[str, ...]  # declared, but the controller resolves no such name: nobody can submit as them
    stale: tuple[str, ...]    # resolvable now, but slurmctld holds them without a uid or their default account

    def unknown_text(self) -> str:
        return (f"the controller has no Unix account for {', '.join(self.unknown)} (getent passwd finds none), so "
                f"slurmctld refuses their jobs: {ORDER} again")

    def stale_text(self, held: dict[str, Held]) -> str:
        return "; ".join(f"{name} ({_why(held[name.lower()])})" for name in self.stale)


def _why(found: Held) -> str:
    if found.uid is None:
        return "no uid: it could not resolve the name when it learned of the user"
    return "no default account: it could not resolve the name when it started"


def users_view(valid: ValidCluster, held: dict[str, Held], unix: set[str]) -> UsersView:
    """Only users slurmctld already holds are judged: one the deploy is about to add is learned as it is added."""
    unknown, stale = [], []
    for user in valid.accounting.users if valid.accounting is not None else ():
        found = held.get(user.name.lower())
        if user.name not in unix:
            unknown.append(user.name)
        elif found is not None and (found.uid is None or (user.default is not None and found.default_account is None)):
            stale.append(user.name)
    return UsersView(tuple(unknown), tuple(stale))
