"""The command reference: every command with its options (mkdocs-click) and its exit statuses."""

from __future__ import annotations


def commands_page() -> str:
    return "# Commands\n"
