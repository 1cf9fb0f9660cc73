"""Creating, checking and rotating a cluster's secrets in Vault. Never overwrites a value it did not mean to replace.

A KV write replaces every field of a secret, so a write always carries the other fields stored at the same path
along, and on KV v2 is a check-and-set against the version just read: a concurrent writer makes it fail, not lose.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .cluster import ClusterSecrets, Kind, Location
from .errors import SecretMalformed, SecretMissing, SecretsError


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one secret; ``fingerprint`` (a key's, never a password's) and ``size`` describe the value
    without showing it; ``version`` tells one value from the next."""

    location: Location
    status: str
    version: int | None = None
    fingerprint: str | None = None
    size: int | None = None
    problem: str | None = None


def _by_path(secrets: ClusterSecrets, kinds: Iterable[Kind]) -> dict[str, list[Location]]:
    groups: dict[str, list[Location]] = {}
    for kind in kinds:
        location = secrets.location(kind)
        groups.setdefault(location.path, []).append(location)
    return groups


def init(secrets: ClusterSecrets) -> list[Outcome]:
    """Create every secret of the cluster that does not exist yet; leave every existing one as it is."""
    outcomes = []
    for path, locations in _by_path(secrets, secrets.kinds).items():
        stored = secrets.store.read(path)
        absent = [loc for loc in locations if stored.fields is None or loc.field not in stored.fields]
        new_values, made, owned_elsewhere = {}, {}, {}
        for loc in absent:
            if not loc.kind.made_here:  # the site directory's password: said missing, with where it goes
                owned_elsewhere[loc.field] = Outcome(loc, "missing", problem=str(secrets.missing(loc.kind, stored)))
                continue
            secret, text = loc.kind.generate(loc.kind.label)
            new_values[loc.field] = text
            made[loc.field] = secret
        version = stored.version
        if new_values:
            data = stored.fields.with_values(new_values) if stored.fields is not None else new_values
            version = secrets.store.write(path, data, cas=stored.version)
        for loc in locations:
            if loc.field in owned_elsewhere:
                outcomes.append(owned_elsewhere[loc.field])
            elif loc.field in made:
                secret = made[loc.field]
                outcomes.append(Outcome(loc, "created", version, loc.kind.fingerprint(secret), len(secret)))
            else:
                outcomes.append(_checked(secrets, loc, stored, "exists"))
    return outcomes


def _checked(secrets: ClusterSecrets, loc: Location, stored, status: str) -> Outcome:
    assert stored.fields is not None
    try:
        secret = loc.kind.check(stored.fields.value(loc.field), str(loc), loc.kind.label,
                                secrets.rotate_hint(loc.kind))
    except SecretMalformed as error:
        return Outcome(loc, "malformed", stored.version, problem=str(error))
    return Outcome(loc, status, stored.version, loc.kind.fingerprint(secret), len(secret))


def check(secrets: ClusterSecrets) -> list[Outcome]:
    """Each secret's state. A missing or malformed secret is an outcome; Vault being unusable is raised."""
    outcomes = []
    for kind in secrets.kinds:
        loc = secrets.location(kind)
        try:
            secret, stored = secrets.read(kind)
        except (SecretMissing, SecretMalformed) as error:
            status = "missing" if isinstance(error, SecretMissing) else "malformed"
            outcomes.append(Outcome(loc, status, problem=str(error)))
            continue
        outcomes.append(Outcome(loc, "ok", stored.version, kind.fingerprint(secret), len(secret)))
    return outcomes


@dataclass(frozen=True, slots=True)
class Rotation:
    new: Outcome
    previous_version: int | None
    previous_fingerprint: str | None


def rotate(secrets: ClusterSecrets, kind_name: str) -> Rotation:
    """Store a new random value as a new version; the previous one stays readable on KV v2."""
    kind = secrets.kind(kind_name)
    loc = secrets.location(kind)
    stored = secrets.store.read(loc.path)
    if stored.fields is None or loc.field not in stored.fields:
        raise SecretsError(f"no {kind.label} at {loc} to rotate; create it with clusterforge secrets init INVENTORY")
    try:
        previous = kind.check(stored.fields.value(loc.field), str(loc), kind.label, "")
        previous_fingerprint = kind.fingerprint(previous)
    except SecretMalformed:
        previous_fingerprint = None  # replacing a broken value is one reason to rotate
    secret, text = kind.generate(kind.label)
    version = secrets.store.write(loc.path, stored.fields.with_values({loc.field: text}), cas=stored.version)
    return Rotation(Outcome(loc, "rotated", version, kind.fingerprint(secret), len(secret)), stored.version,
                    previous_fingerprint)
