"""How the output counts things: "1 node", "2 nodes", "1 switch", "3 switches"."""

from __future__ import annotations


def counted(n: int, one: str, several: str | None = None) -> str:
    """``n`` and the noun for that many; ``several`` where the plural is not ``one`` with an s."""
    return f"{n} {one if n == 1 else several or one + 's'}"
