"""munge: the key every host shares, from Vault, and munged restarted only when the key changes.

    from clusterforge.roles.munge import munge_key
    munge_key()          # on every host, before anything that restarts a Slurm daemon

pyinfra runs each operation on all hosts before the next, so calling this first puts the new key in place and
restarts munged everywhere before slurmdbd, slurmctld and slurmd are restarted. Expects the munge package (its user
and unit) to be installed.
"""

from __future__ import annotations

import hashlib

from pyinfra import host, state
from pyinfra.api import deploy
from pyinfra.facts.files import Sha1File
from pyinfra.operations import files, python, systemd

from ..model import ValidCluster
from ..secrets import Secret, SecretsError, secrets_for
from .upload import SecretFile, refuse_diff

KEY_DIR = "/etc/munge"
KEY_FILE = f"{KEY_DIR}/munge.key"


def _run_is_partial() -> bool:
    limit = getattr(state, "limit_hosts", None)
    return isinstance(limit, list) and len(limit) < len(list(state.inventory))


def _refuse_partial_key_change(key: Secret) -> None:
    # Hosts with different keys cannot talk to each other, so a key change must reach every host in one run;
    # a new host (no key yet) may be added on its own.
    if not _run_is_partial():
        return
    installed = host.get_fact(Sha1File, path=KEY_FILE)
    if installed and installed != hashlib.sha1(key.reveal()).hexdigest():
        raise SecretsError(f"{host.name}: {KEY_FILE} differs from the munge key in Vault, and this run is limited "
                           "(--limit/--exclude). Deploy a new munge key to all hosts in one run, or munged on the "
                           "hosts left out will reject the others")


@deploy("munge key")
def munge_key() -> None:
    """Install the cluster's munge key (0400 munge:munge) and restart munged if it changed."""
    refuse_diff(KEY_FILE)
    valid: ValidCluster = host.data.clusterforge
    key = secrets_for(valid).munge_key()
    _refuse_partial_key_change(key)
    files.directory(name=f"{KEY_DIR} is 0700 munge:munge", path=KEY_DIR, user="munge", group="munge", mode="0700")
    upload = files.put(name=f"{KEY_FILE} from Vault", src=SecretFile(key), dest=KEY_FILE, user="munge",
                       group="munge", mode="0400")
    systemd.service(name="munged is running and enabled", service="munge", running=True, enabled=True)
    systemd.service(name="restart munged for its new key", service="munge", restarted=True,
                    _if=upload.did_change)
    controller = valid.controller
    if controller is not None and controller.name != host.name and controller.name in state.inventory.hosts:
        python.call(name=f"a credential made on {controller.name} decodes here", function=decodes_credential_of,
                    origin=controller.name, _if=upload.did_change)


class MungeCheckError(SecretsError):
    pass


def decodes_credential_of(origin: str) -> None:
    """Make a credential on ``origin`` and decode it on this host: both munged then share the key (a credential holds
    no secret; it is valid for five minutes)."""
    source = state.inventory.get_host(origin)
    ok, made = source.run_shell_command("munge --no-input")
    if not ok:
        raise MungeCheckError(f"{origin}: munge could not make a credential: {made.stderr}")
    credential = made.stdout.strip()
    ok, decoded = host.run_shell_command(f"echo {credential} | unmunge --no-output")
    if not ok:
        raise MungeCheckError(f"{host.name} cannot decode a credential made on {origin} ({decoded.stderr.strip()}): "
                              f"the munge keys differ, or a clock is off")
