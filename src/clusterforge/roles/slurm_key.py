"""slurm.key: the key of auth/slurm and cred/slurm (Slurm 23.11 or newer), from Vault, on every Slurm host; the
daemons that hold it restarted only where its bytes changed. And sackd, which hands out credentials on login hosts.

    from clusterforge.roles.slurm_key import munge_unused, runs_sackd, sackd, slurm_key
    slurm_key()         # on every Slurm host, where munge_key() goes for auth/munge: before the Slurm files
    ...
    if runs_sackd(groups):
        sackd()         # after the Slurm files: sackd reads slurm.conf
    munge_unused()      # last, on every host: munged is stopped and disabled

What Debian 13's Slurm 24.11 does with the key (its slurmctld, slurmd, slurmdbd and sackd were run on it):

* slurmctld, slurmdbd, slurmd and sackd read ``/etc/slurm/slurm.key`` (next to slurm.conf) once, when they start, so
  a new key takes a restart. slurmctld, slurmdbd and sackd run as the slurm user: the key is ``0600 slurm:slurm``.
  Any permission for others is fatal ("key file is insecure"); an owner other than root or SlurmUser is warned about.
* Client commands (sinfo, srun, sbatch, sacct, sacctmgr, scontrol) never read the key, so ordinary users need no
  access to it: they ask a daemon on the same host for a signed credential over a unix socket, trying
  ``/run/slurm/sack.socket`` (slurmd or sackd), ``/run/slurmctld/sack.socket`` and ``/run/slurmdbd/sack.socket`` in
  that order. A host with none of those daemons, a login host, runs sackd (package ``sackd``, unit
  ``sackd.service``) for that alone; slurmd and sackd share ``/run/slurm`` (both units' RuntimeDirectory), so sackd
  never runs next to slurmd.
* munge is not used, but Debian's slurmctld, slurmd, slurmdbd and slurm-client still depend on the munge package, so
  apt installs it and its postinst enables munged with a random key of its own. Nothing talks to it: the deploy
  installs no munge key and leaves munged stopped and disabled.

pyinfra runs each operation on all hosts before the next, so the key reaches every host first and then the daemons
restart in the order slurmdbd, slurmctld, slurmd, sackd, each waited for. Only daemons that are already running are
restarted: on a first deploy the daemons' own roles start them later, with the key in place.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from pyinfra import host, state
from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta
from pyinfra.facts.files import Sha1File
from pyinfra.operations import files, server, systemd

from ..model import ValidCluster
from ..secrets import Secret, SecretsError, secrets_for
from .packages import install
from .slurmctld import ANSWERS
from .slurmd import responding
from .upload import SecretFile, refuse_diff
from .waits import until

KEY_DIR = "/etc/slurm"
KEY_FILE = f"{KEY_DIR}/slurm.key"
SACK_SOCKET = "/run/slurm/sack.socket"
# The daemons that read the key on a host of each group, in the order they restart after a new key.
DAEMONS = (("database", "slurmdbd"), ("controller", "slurmctld"), ("compute", "slurmd"), ("sackd", "sackd"))


def runs_sackd(groups: Iterable[str]) -> bool:
    """Login hosts run sackd unless slurmctld or slurmd already serve credentials there (slurmd and sackd would
    share /run/slurm)."""
    found = set(groups)
    return "login" in found and not {"compute", "controller"} & found


def key_daemons(groups: Iterable[str]) -> list[str]:
    """The daemons on a host of these groups that read slurm.key, in the order they restart."""
    found = set(groups) | ({"sackd"} if runs_sackd(groups) else set())
    return [daemon for group, daemon in DAEMONS if group in found]


def _run_is_partial() -> bool:
    limit = getattr(state, "limit_hosts", None)
    return isinstance(limit, list) and len(limit) < len(list(state.inventory))


def _refuse_partial_key_change(key: Secret) -> None:
    # Daemons with different keys reject each other's credentials, so a new key must reach every host in one run;
    # a new host (no key yet) may be added on its own.
    if not _run_is_partial():
        return
    installed = host.get_fact(Sha1File, path=KEY_FILE)
    if installed and installed != hashlib.sha1(key.reveal()).hexdigest():
        raise SecretsError(f"{host.name}: {KEY_FILE} differs from the slurm.key in Vault, and this run is limited "
                           "(--limit/--exclude). Deploy a new slurm.key to all hosts in one run, or the daemons on "
                           "the hosts left out will reject the others")


def _wait_after_restart(valid: ValidCluster, daemon: str) -> str:
    if daemon == "slurmdbd":
        port = valid.slurm_conf["AccountingStoragePort"]
        return until(f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'", f"slurmdbd listens on port {port}")
    if daemon == "slurmctld":
        return ANSWERS
    if daemon == "slurmd":
        name = host.data.clusterforge_node.name
        return until(responding(name), f"node {name} responds")
    return until(f"test -S {SACK_SOCKET}", f"sackd serves {SACK_SOCKET}")


def _restart(valid: ValidCluster, daemon: str, mine: list[str], upload: OperationMeta) -> None:
    """Restart ``daemon`` for a new key where this host runs it. Every Slurm host gets the operation, skipped where it
    does not apply: pyinfra orders operations across hosts only through the ones they share, so this is what makes
    each restart wait for the previous one on every other host."""
    holds = daemon in mine
    # running=None: restart only a daemon that runs; one not started yet starts later, with the key in place.
    restarted = systemd.service(name=f"restart {daemon} for the new slurm.key", service=daemon, running=None,
                                restarted=True, _if=[upload.did_change, lambda: holds])
    wait = _wait_after_restart(valid, daemon) if holds else "true"
    server.shell(name=f"wait until {daemon} is back", commands=[wait], _if=restarted.did_change)


@deploy("slurm.key")
def slurm_key() -> None:
    """Install the cluster's slurm.key (0600 slurm:slurm) and, if it changed, restart the running daemons that read it,
    in the order slurmdbd, slurmctld, slurmd, sackd across the cluster. Expects the slurm user (common) and the Slurm
    packages to be installed."""
    refuse_diff(KEY_FILE)
    valid: ValidCluster = host.data.clusterforge
    key = secrets_for(valid).slurm_key()
    _refuse_partial_key_change(key)
    files.directory(name=f"{KEY_DIR} exists", path=KEY_DIR, mode="0755")
    upload = files.put(name=f"{KEY_FILE} from Vault", src=SecretFile(key), dest=KEY_FILE, user="slurm",
                       group="slurm", mode="0600")
    mine = key_daemons(host.data.clusterforge_machine.groups)
    _restart(valid, "slurmdbd", mine, upload)
    _restart(valid, "slurmctld", mine, upload)
    _restart(valid, "slurmd", mine, upload)
    _restart(valid, "sackd", mine, upload)


@deploy("sackd packages")
def sackd_packages() -> None:
    install("sackd", ["sackd"])


@deploy("sackd")
def sackd() -> None:
    """sackd on a login host: the service, and a wait until its socket is there. Needs slurm.conf and slurm.key in
    place, not slurmctld (which this host's operations are not ordered after)."""
    started = systemd.service(name="sackd is running and enabled", service="sackd", running=True, enabled=True)
    server.shell(name=f"wait until sackd serves {SACK_SOCKET}",
                 commands=[until(f"test -S {SACK_SOCKET}", f"sackd serves {SACK_SOCKET}")], _if=started.did_change)


@deploy("munge unused")
def munge_unused() -> None:
    """With auth/slurm nothing uses munged; Debian's Slurm packages pull in munge, whose postinst enables munged with
    a random key. Stop and disable it (a no-op where munge is not installed)."""
    systemd.service(name="munged is stopped and disabled: auth/slurm does not use it", service="munge",
                    running=False, enabled=False)
