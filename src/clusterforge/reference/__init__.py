"""The documentation's reference pages, generated from the code: the inventory's fields from the pydantic models,
the commands from their click definitions. docs/hooks/reference.py adds them to the site at every build."""

from __future__ import annotations

from collections.abc import Callable

from .commands import commands_page
from .fields import inventory_page

# Each generated page by its path under docs/.
PAGES: dict[str, Callable[[], str]] = {
    "reference/inventory.md": inventory_page,
    "reference/commands.md": commands_page,
}
