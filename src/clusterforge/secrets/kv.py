"""Reading and writing one KV secret (version 1 or 2), named as the vault CLI names it: ``mount/path``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import hvac.exceptions as hvac_errors

from .errors import SecretConflict
from .session import VaultSession


class Fields:
    """Every field of a stored secret. Its repr shows the field names only, since the values are secrets."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = dict(data)

    def names(self) -> list[str]:
        return sorted(self._data)

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def value(self, name: str) -> Any:
        return self._data[name]

    def with_values(self, values: dict[str, str]) -> dict[str, Any]:
        """The data to write: these fields set, every other field kept, since a KV write replaces the whole secret."""
        return {**self._data, **values}

    def __repr__(self) -> str:
        return f"<fields {', '.join(self.names())}>"


@dataclass(frozen=True, slots=True)
class Stored:
    """A secret as read. ``version`` is the KV v2 version to check-and-set against (0: never written); None on v1.

    ``fields`` is None when nothing is stored, including a KV v2 secret whose latest version is deleted.
    """

    fields: Fields | None
    version: int | None


class KvStore:
    def __init__(self, session: VaultSession, mount: str, kv_version: int) -> None:
        self.session = session
        self.mount = mount
        self.kv_version = kv_version

    def name(self, path: str) -> str:
        return f"{self.mount}/{path}"

    def api_path(self, path: str) -> str:
        """The path a policy must grant, which for KV v2 has ``data/`` after the mount."""
        return f"{self.mount}/data/{path}" if self.kv_version == 2 else f"{self.mount}/{path}"

    def read(self, path: str, version: int | None = None) -> Stored:
        kv = self.session.client.secrets.kv
        what = f"reading {self.api_path(path)}"
        try:
            if self.kv_version == 1:
                response = self.session.call(what, kv.v1.read_secret, path=path, mount_point=self.mount,
                                             passthrough=(hvac_errors.InvalidPath,))
                return Stored(Fields(response["data"]), None)
            # Without raising, a deleted latest version still tells its number, which a write must check-and-set.
            response = self.session.call(what, kv.v2.read_secret_version, path=path, mount_point=self.mount,
                                         version=version, raise_on_deleted_version=False,
                                         passthrough=(hvac_errors.InvalidPath,))
        except hvac_errors.InvalidPath:
            return Stored(None, 0 if self.kv_version == 2 else None)
        data = response["data"]
        latest = int(data["metadata"]["version"])
        return Stored(Fields(data["data"]) if data.get("data") is not None else None, latest)

    def write(self, path: str, data: dict[str, Any], cas: int | None) -> int | None:
        """Store ``data`` as the whole secret; on KV v2 only if it is still at version ``cas``. The new version."""
        kv = self.session.client.secrets.kv
        what = f"writing {self.api_path(path)}"
        if self.kv_version == 1:
            self.session.call(what, kv.v1.create_or_update_secret, path=path, secret=data, mount_point=self.mount)
            return None
        try:
            response = self.session.call(what, kv.v2.create_or_update_secret, path=path, secret=data, cas=cas,
                                         mount_point=self.mount, passthrough=(hvac_errors.InvalidRequest,))
        except hvac_errors.InvalidRequest as error:
            failure = (SecretConflict(f"{self.name(path)} changed while clusterforge was writing it (expected "
                                      f"version {cas}); nothing was overwritten. Run the command again")
                       if "check-and-set" in str(error) else self.session.explain(error, what))
        else:
            return int(response["data"]["version"])
        raise failure

    def mount_kv_version(self) -> int | None:
        """The KV version the mount really has, or None if that cannot be told; only used to explain a miss."""
        try:
            response = self.session.client.adapter.get(f"/v1/sys/internal/ui/mounts/{self.mount}")
        except Exception:  # noqa: BLE001 - a hint only; the caller reports the original problem
            return None
        data = (response or {}).get("data") or {}
        if data.get("type") not in ("kv", "generic"):
            return None
        return 2 if str((data.get("options") or {}).get("version")) == "2" else 1
