"""A secret value that cannot be printed by accident."""

from __future__ import annotations

import hashlib
import hmac


class Secret:
    """Bytes whose repr and str are masked, so a secret in a log line, a traceback or host data shows only a label.

    ``reveal()`` is the one way to get the bytes; call it where they leave for their target file, nowhere else.
    """

    __slots__ = ("_label", "_value")

    def __init__(self, value: bytes, label: str) -> None:
        if not isinstance(value, bytes):
            raise TypeError("Secret holds bytes")
        self._value = value
        self._label = label

    @property
    def label(self) -> str:
        return self._label

    def reveal(self) -> bytes:
        return self._value

    def reveal_text(self) -> str:
        """The value as text, for secrets that are text (a password)."""
        return self._value.decode("utf-8")

    def fingerprint(self) -> str:
        """First 16 hex digits of the value's SHA-256: enough to tell two values apart, useless to recover one."""
        return hashlib.sha256(self._value).hexdigest()[:16]

    def __len__(self) -> int:
        return len(self._value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value, other._value)

    def __hash__(self) -> int:
        return hash(self.fingerprint())

    def __repr__(self) -> str:
        return f"<secret {self._label}>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict) -> Secret:
        return self

    def __reduce__(self):  # pickling would write the value wherever the pickle goes
        raise TypeError("a Secret is not picklable")
