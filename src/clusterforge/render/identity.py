"""What the deploy writes for the cluster's people: each person's authorized_keys."""

from __future__ import annotations

from ..model.identity import Person


def authorized_keys(person: Person) -> str:
    """The inventory's keys, one a line, in its order."""
    return "".join(f"{key.strip()}\n" for key in person.ssh_keys)
