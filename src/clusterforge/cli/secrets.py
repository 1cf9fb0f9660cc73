"""``clusterforge secrets``: create, check and rotate a cluster's secrets in Vault; shows fingerprints, never values.
Each command imports the inventory's model and the Vault client when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..json_documents import document
from .exits import exit_statuses

if TYPE_CHECKING:  # the Vault client is imported by the commands that talk to Vault, not by every clusterforge call
    from ..secrets import ClusterSecrets
    from ..secrets.manage import Outcome

# clusterforge.secrets.KINDS by name (tests/cli checks they agree).
KIND_NAMES = ("db-password", "jwt-key", "munge-key", "slurm-key")

INVENTORY = click.argument("inventory", type=click.Path(dir_okay=False))
NEEDS_ATTENTION = 1  # secrets check: Vault was read and a secret is missing or malformed; 2 is Vault unusable

_NEXT_DEPLOY = {
    "munge-key": (
        "The next deploy installs /etc/munge/munge.key on every host and restarts munged there, on all hosts before\n"
        "anything else, then checks that each host decodes a credential made on the controller. slurmdbd, slurmctld\n"
        "and slurmd ask munged for every credential, so they keep running."),
    "slurm-key": (
        "The next deploy installs /etc/slurm/slurm.key (0600 slurm) on every Slurm host first, then restarts the\n"
        "running daemons that read it, in the order slurmdbd, slurmctld, slurmd, sackd (login hosts), so that they\n"
        "use the new key. Client commands get their credentials from those daemons and need no restart."),
    "jwt-key": (
        "The next deploy installs /etc/slurm/jwt_hs256.key (0600 slurm) on the controller(s) and the database host,\n"
        "then restarts slurmdbd and slurmctld, which read it only when they start. Every token made with the old\n"
        "key is refused from then on: callers of slurmrestd get new ones (scontrol token). Nothing else restarts."),
    "db-password": (
        "The next deploy sets the MariaDB password of the slurmdbd user to the new value, writes it as StoragePass\n"
        "into slurmdbd.conf on the database host and restarts slurmdbd; slurmctld queues accounting meanwhile."),
}

_ALL_HOSTS = (
    "Deploy to ALL hosts in one run, without --limit or --exclude: until every host has the new key, hosts with\n"
    "the old one and hosts with the new one cannot authenticate each other (running jobs go on, but launches and\n"
    "RPCs between them fail).")


_JWT_HOSTS = (
    "Deploy it to the controller(s) and the database host in one run, without --limit or --exclude leaving one out:\n"
    "slurmctld makes the tokens and slurmdbd checks them too, so with different keys slurmrestd's accounting\n"
    "requests (/slurmdb/...) are refused.")


def _secrets(inventory: str, announce: bool = True) -> ClusterSecrets:
    from ..loader import every_problem
    from ..secrets import ClusterSecrets

    secrets = ClusterSecrets(every_problem(inventory))
    endpoint = secrets.store.session.endpoint
    if announce:
        click.echo(f"cluster {secrets.valid.name}: Vault {endpoint.address} (address from {endpoint.address_from}), "
                   f"KV v{secrets.vault.kv_version} mount {secrets.vault.kv_mount!r}")
    return secrets


def _line(outcome: Outcome) -> str:
    loc = outcome.location
    text = f"  {outcome.status:<9} {loc.kind.label:<27} {loc}"
    if outcome.version is not None:
        text += f", version {outcome.version}"
    if outcome.size is not None:
        text += f": {outcome.size} bytes" + (f", sha256:{outcome.fingerprint}" if outcome.fingerprint else "")
    return text


def _report(outcomes: list[Outcome]) -> list[Outcome]:
    """Print every outcome; the problems in detail after them."""
    for outcome in outcomes:
        click.echo(_line(outcome))
    problems = [o for o in outcomes if o.problem]
    for outcome in problems:
        click.echo(f"\n{outcome.problem}", err=True)
    return problems


@click.group()
def secrets() -> None:
    """Create, check and rotate the cluster's secrets in Vault.

    The munge key, the slurmdbd password, slurm.key and the JWT key."""


@exit_statuses({0: "every secret exists now (the missing ones created)",
                2: "an existing secret is unusable (init never overwrites), one clusterforge does not make (a site "
                   "directory's bind password) is missing, or Vault could not be used"})
@secrets.command("init")
@INVENTORY
def init_command(inventory: str) -> None:
    """Create the secrets that do not exist yet.

    It never overwrites one that does."""
    from ..secrets import SecretsError
    from ..secrets.manage import init

    outcomes = init(_secrets(inventory))
    problems = _report(outcomes)
    created = sum(o.status == "created" for o in outcomes)
    click.echo(f"{created} created, {len(outcomes) - created} already there and left as they are.")
    missing = [o for o in problems if o.status == "missing"]  # what clusterforge does not make (a directory's)
    if missing:
        raise SecretsError(f"{len(missing)} secret(s) that clusterforge does not make are missing (see above): "
                           "store them in Vault")
    if problems:
        raise SecretsError(f"{len(problems)} existing secret(s) are unusable (see above); init never overwrites, "
                           "so replace them with clusterforge secrets rotate")


@exit_statuses({0: "every secret is present and well-formed",
                NEEDS_ATTENTION: "a secret is missing or malformed, each named (Vault was read)",
                2: "Vault could not be used (unreachable, sealed, no token or no permission), or a mistake in the "
                   "arguments or the inventory"})
@secrets.command("check")
@INVENTORY
@click.option("--json", "as_json", is_flag=True, help="one JSON document, for scripts")
def check_command(inventory: str, as_json: bool) -> None:
    """Check that every secret exists and is well-formed.

    Prints each key's sha256 fingerprint (a password's none), never values."""
    from ..secrets.manage import check

    secrets = _secrets(inventory, announce=not as_json)
    outcomes = check(secrets)
    if as_json:
        click.echo(document("secrets check", _as_json(secrets, outcomes)))
    problems = [o for o in outcomes if o.problem] if as_json else _report(outcomes)
    if problems:
        raise _NeedsAttention(f"{len(problems)} of {len(outcomes)} secrets need attention"
                              + (" (see above)" if not as_json else ""))
    if not as_json:
        click.echo(f"all {len(outcomes)} secrets are present and well-formed.")


class _NeedsAttention(click.ClickException):
    exit_code = NEEDS_ATTENTION


def _as_json(secrets: ClusterSecrets, outcomes: list[Outcome]) -> dict[str, object]:
    endpoint = secrets.store.session.endpoint
    return {
        "cluster": secrets.valid.name,
        "vault": {"address": endpoint.address, "address_from": endpoint.address_from,
                  "kv_version": secrets.vault.kv_version, "kv_mount": secrets.vault.kv_mount},
        "ok": not any(o.problem for o in outcomes),
        "secrets": [{"kind": o.location.kind.name, "label": o.location.kind.label, "path": o.location.name,
                     "field": o.location.field, "status": o.status, "version": o.version, "size": o.size,
                     "fingerprint": f"sha256:{o.fingerprint}" if o.fingerprint else None, "problem": o.problem}
                    for o in outcomes],
    }


@exit_statuses({0: "a new version of the secret is stored; nothing changed on any host"})
@secrets.command("rotate")
@INVENTORY
@click.argument("which", metavar="SECRET", type=click.Choice(KIND_NAMES))
def rotate_command(inventory: str, which: str) -> None:
    """Store a new random value for one secret, as a new version.

    SECRET is db-password, jwt-key, munge-key or slurm-key. Then it says what the next deploy will do with it."""
    secrets = _secrets(inventory)
    from ..secrets.manage import rotate

    rotation = rotate(secrets, which)
    new = rotation.new
    kind = new.location.kind
    click.echo(f"Stored a new {kind.label} at {new.location}"
               + (f" as version {new.version}" if new.version is not None else "")
               + f": {new.size} bytes" + (f", sha256:{new.fingerprint}." if new.fingerprint else "."))
    if rotation.previous_version is not None:
        was = f" (sha256:{rotation.previous_fingerprint})" if rotation.previous_fingerprint else ""
        click.echo(f"The previous value, version {rotation.previous_version}{was}, is still readable: "
                   f"vault kv get -version={rotation.previous_version} {new.location.name}")
    else:
        click.echo("This KV v1 mount keeps no history: the previous value is gone from Vault.")
    click.echo("Nothing has changed on any host yet.")
    click.echo(_NEXT_DEPLOY[which])
    if which in ("munge-key", "slurm-key"):
        click.echo(_ALL_HOSTS)
    elif which == "jwt-key":
        click.echo(_JWT_HOSTS)
