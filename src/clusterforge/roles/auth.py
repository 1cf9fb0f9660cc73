"""The key the cluster authenticates with, from Vault: munge's (``/etc/munge/munge.key``, read by munged) or, with
auth/slurm (Slurm 23.11 or newer), ``/etc/slurm/slurm.key``, read by slurmdbd, slurmctld, slurmd and sackd.

Hosts with different keys reject each other, so a key change must reach every host in one run: a run limited with
--limit/--exclude that would change an installed key stops before changing anything (a new host, with no key yet,
may be added on its own). The daemons that read a key restart for a new one in their own steps (roles/daemons.py),
in the order munged first, then slurmdbd, slurmctld, slurmd, sackd, each only where its record shows another key.

What Debian 13's Slurm 24.11 does with slurm.key (its daemons were run on it):

* slurmctld, slurmdbd, slurmd and sackd read the key once, when they start; slurmctld, slurmdbd and sackd run as
  the slurm user, so it is ``0600 slurm:slurm`` (any permission for others is fatal: "key file is insecure").
* Client commands never read the key: they ask a daemon on the same host for a credential over a unix socket
  (``/run/slurm/sack.socket`` of slurmd or sackd, then ``/run/slurmctld/``, ``/run/slurmdbd/``). A login host, which
  runs none of those daemons, runs sackd for that alone; slurmd and sackd share ``/run/slurm``, so never both.
* Debian's Slurm packages still depend on munge (up to Debian 13; forky's only recommend it), whose postinst
  enables munged with a random key: with auth/slurm munged is stopped and disabled, and no munge key is installed.
"""

from __future__ import annotations

from ..distributions import pulls_munge
from ..errors import DeployError, for_pyinfra
from ..model import ValidCluster
from ..model.settings import SLURM_DIR
from ..secrets import Secret
from ..engine import ops, remote
from ..engine.change import Change
from ..engine.footprint import Footprint
from ..engine.run import DeployRun, Here, call, step
from ..engine.upload import refuse_diff

MUNGE_DIR = "/etc/munge"
MUNGE_KEY = f"{MUNGE_DIR}/munge.key"
SLURM_KEY = f"{SLURM_DIR}/slurm.key"


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """Both keys' places, and munged on every host: where auth/slurm replaced munge, it is stopped wherever it
    runs."""
    return Footprint(paths=(MUNGE_DIR, MUNGE_KEY, SLURM_DIR, SLURM_KEY), units=("munge.service",))


def key(here: Here) -> Secret:
    """The cluster's authentication key."""
    secrets = here.run.secrets
    return secrets.slurm_key() if here.valid.auth == "slurm" else secrets.munge_key()


def key_path(valid: ValidCluster) -> str:
    return SLURM_KEY if valid.auth == "slurm" else MUNGE_KEY


def _refuse_partial_key_change(here: Here, secret: Secret) -> None:
    path = key_path(here.valid)
    installed = here.state.paths.get(path)
    if here.run.partial and installed is not None and installed.sha256 != ops.sha256(secret):
        raise for_pyinfra(DeployError(
            f"{here.name}: {path} differs from the {secret.label} in Vault, and this run is limited "
            "(--limit/--exclude). Deploy a new key to all hosts in one run, or the daemons on the hosts left out "
            "will reject the others"))


@step("auth key", footprint=footprint)
def auth_key(here: Here) -> None:
    """The key in place on every host that authenticates: munge.key 0400 munge:munge, or slurm.key 0600
    slurm:slurm on every Slurm host."""
    valid = here.valid
    if valid.auth == "slurm" and not here.machine.runs_slurm:
        return
    path = key_path(valid)
    refuse_diff(here.run, path)
    secret = key(here)
    _refuse_partial_key_change(here, secret)
    if valid.auth == "slurm":
        ops.directory(here, name=f"{SLURM_DIR} exists", path=SLURM_DIR)
        ops.file(here, name=f"{SLURM_KEY} from Vault", path=SLURM_KEY, content=secret, mode="0600", user="slurm",
                 group="slurm")
    else:
        ops.directory(here, name=f"{MUNGE_DIR} is 0700 munge:munge", path=MUNGE_DIR, mode="0700", user="munge",
                      group="munge")
        ops.file(here, name=f"{MUNGE_KEY} from Vault", path=MUNGE_KEY, content=secret, mode="0400", user="munge",
                 group="munge")


def key_inputs(here: Here) -> str:
    """What a daemon that reads the key applies of it, for its record."""
    return ops.digest(key(here))


@step("munged", footprint=footprint)
def munged(here: Here) -> None:
    """munged runs with the cluster's key (restarted where it runs another), and every host where it (re)started
    decodes a credential made on the controller; with auth/slurm it is stopped and disabled instead."""
    valid = here.valid
    if valid.auth == "slurm":
        # Debian's Slurm packages depend on munge (forky's do not); where they arrive in this run, munge arrives
        # with them.
        ops.stopped(here, name="munged is stopped and disabled: auth/slurm does not use it", unit="munge",
                    arriving=here.machine.runs_slurm and "munge" not in here.state.packages
                    and pulls_munge(here.state.os))
        return
    inputs = key_inputs(here)
    controller = valid.controller
    # Beside the controller, munged is recorded as running the key only once it decodes the controller's credential:
    # a host that failed the check owes its restart, and the check, to the next run.
    checked = controller.name != here.machine.name and here.run.host_of(controller.name) is not None
    # The key is written by the key's step: whether this run changes it is asked of the host's state.
    started = ops.service(here, name="munged runs with the key from Vault", unit="munge", inputs=(key(here),),
                          changing=ops.will_change(here.state, MUNGE_KEY, key(here)),
                          why="the key from Vault differs from the one munged started with", checked_later=checked)
    if checked and started.acts:
        here.apply(Change(f"a credential made on {controller.name} decodes here",
                          (call(decodes_credential_of, origin=controller.name,
                                record=ops.record_command("munge", inputs)),),
                          (f"a credential made on {controller.name} is decoded here, once munged runs the new key",)))


def _credential_from(run: DeployRun, origin: str) -> str:
    """One credential made on ``origin`` for the whole run: asking ``origin`` once per host would open as many
    sessions on its one SSH connection at once, more than sshd allows (MaxSessions, 10 by default)."""

    def make() -> str:
        source = run.host_of(origin)
        if source is None:
            raise for_pyinfra(DeployError(f"{origin} failed in this run: it made no credential to decode. The next "
                                          "run restarts munged here and checks again"))
        ok, made = remote.run(source, "munge --no-input")
        if not ok:
            raise for_pyinfra(DeployError(f"{origin}: munge could not make a credential: {made.stderr}"))
        return made.stdout.strip()

    return run.once(("munge credential", origin), make)


def decodes_credential_of(here: Here, origin: str, record: str) -> None:
    """Decode here a credential made on ``origin``: both munged then share the key; then ``record`` it. A credential
    holds no secret, is valid for five minutes, and may be decoded once on each host."""
    credential = _credential_from(here.run, origin)
    ok, decoded = remote.run(here.host, f"echo {credential} | unmunge --no-output")
    name = here.name
    if not ok:
        raise for_pyinfra(DeployError(f"{name} cannot decode a credential made on {origin} "
                                      f"({decoded.stderr.strip()}): the munge keys differ, or a clock is off. The "
                                      "next run restarts munged here and checks again"))
    ok, recorded = remote.run(here.host, record)
    if not ok:
        raise for_pyinfra(DeployError(f"{name}: munged's record could not be written: {recorded.stderr}"))
