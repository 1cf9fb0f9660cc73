"""What `clusterforge apply`, `plan` and `roll` share to run the deploy through pyinfra: the deploy file by
default, pyinfra's entry point and what a failed run's output says went wrong."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import ValidCluster

# The deploy file shipped in the package (clusterforge/deploy/cluster.py), found without importing the deploy: pyinfra
# runs it by its path. An installed wheel holds it as a plain file.
DEPLOY = Path(str(files("clusterforge").joinpath("deploy", "cluster.py")))
# pyinfra's own entry point, run by this interpreter: the one whose clusterforge the deploy imports.
PYINFRA = "import sys; from pyinfra_cli.main import main; sys.argv[0] = 'pyinfra'; sys.exit(main())"
# pyinfra's config file for these runs: it attaches the events the commands read (engine/events.py).
CONFIG = Path(str(files("clusterforge").joinpath("engine", "pyinfra_config.py")))


def refuse_plain_http_vault(valid: ValidCluster) -> None:
    """A plain http:// VAULT_ADDR the inventory does not allow, refused before pyinfra connects to any host: the
    deploy reads the secrets only once it runs on the hosts (deploy/order.py)."""
    if valid.vault is not None:
        from ..secrets.settings import address_from_env  # the Vault client only for the commands that deploy

        address_from_env(valid.vault)


def pyinfra_command(*arguments: str) -> list[str]:
    """pyinfra's command line, run by this interpreter, with clusterforge's config file."""
    return [sys.executable, "-c", PYINFRA, "--config", str(CONFIG), *arguments]


def host_arguments(hosts: list[str] | None, every: int) -> list[str]:
    """pyinfra's --limit for exactly these hosts, as pyinfra names them (``pyinfra_names``): each name matches
    itself alone as pyinfra's glob; and its --parallel for all of them (``every``: the inventory's hosts, where
    there is no limit). pyinfra's own default is 20 hosts a CPU: on a deploy host of 2 CPUs, 200 hosts that do not
    answer cost five connection timeouts instead of one (benchmarks/unreachable.py)."""
    count = len(hosts) if hosts is not None else every
    return [*(arg for name in hosts or () for arg in ("--limit", name)), "--parallel", str(max(1, count))]


def pyinfra_names(exposed: Mapping[str, Mapping[str, Any]], machines: list[str] | None) -> list[str] | None:
    """The names pyinfra knows these machines by (``loader.Loaded.hosts``: an inventory file may name its pyinfra
    hosts otherwise, with a connector's prefix); None for None (every host)."""
    if machines is None:
        return None
    named = {data["clusterforge_machine"].name: name for name, data in exposed.items()}
    return [named[machine] for machine in machines]


def pyinfra_failure(output: str) -> str:
    """What went wrong, from pyinfra's output: its error lines, or its last lines."""
    lines = [line for line in output.splitlines() if line.strip()]
    # apt says what went wrong in lines of its own that name no error: "E: Version '...' for 'slurmd' was not found".
    errors = [line.strip() for line in lines if "error" in line.lower() or "could not" in line.lower()
              or re.search(r"\]\s+E: ", line)]
    shown = errors[-20:] or lines[-20:]
    return "the plan could not be made:\n  " + "\n  ".join(shown)
