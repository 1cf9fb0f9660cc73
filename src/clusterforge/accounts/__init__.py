"""Accounts, users and QOS in the accounting database, converged to the inventory: read what sacctmgr lists
(``database``), compare in one normal form (``values``), and plan the sacctmgr commands (``plan``). Pure: no
pyinfra, no I/O; the deploy runs the commands."""

from .database import Database, read_database, show_commands
from .plan import AccountsPlan, Step, accounts_plan, default_account

__all__ = ["AccountsPlan", "Database", "Step", "accounts_plan", "default_account", "read_database",
           "show_commands"]
