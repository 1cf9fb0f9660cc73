"""The inventory reference: every field of every model an inventory builds, from the pydantic models."""

from __future__ import annotations


def inventory_page() -> str:
    return "# Inventory fields\n"
