"""What a well-formed key and password look like, and how new ones are made.

Keys are stored as base64 text, since a KV field holds a JSON string and key files are binary. Messages say what is
wrong with a value, never what the value is.
"""

from __future__ import annotations

import base64
import binascii
import secrets as random_source
from typing import Any

from .errors import SecretMalformed
from .secret import Secret

# munged refuses a shorter key file ("Keyfile must be at least 32 bytes", munge 0.5.15).
KEY_MIN_BYTES = 32
# mungekey's largest key (--bits=8192). munged reads longer files, but a longer value in Vault is more likely a
# wrong paste (a PEM file, a whole config) than a key, so it is refused.
KEY_MAX_BYTES = 1024
NEW_KEY_BYTES = 1024
# A new JWT key: HMAC-SHA256 uses a key of up to its 64-byte block as it is (a longer one is hashed down to 32 bytes
# first), and RFC 7518 (3.2) asks an HS256 key for at least 256 bits, which KEY_MIN_BYTES is.
NEW_JWT_KEY_BYTES = 64
NEW_PASSWORD_BYTES = 32

# slurmdbd.conf is parsed by Slurm: '#' starts a comment, '"' and '\' are quoting and escapes, and a line break or
# blank would end or split the value.
_PASSWORD_FORBIDDEN = set('#"\\')


def decode_key(value: Any, where: str, label: str, rotate_hint: str, *,
               too_short: str = "munged refuses shorter keys", too_long: str = "mungekey's maximum") -> Secret:
    """The key bytes from base64 text. Whitespace is only formatting in base64 (``base64`` wraps at 76 columns, a
    pasted value ends in a newline), so it is removed before strict decoding and never becomes key material.
    ``too_short`` and ``too_long`` say why the bounds are what they are, for this kind of key."""
    if not isinstance(value, str):
        raise SecretMalformed(f"{where}: the {label} must be base64 text, not {type(value).__name__}")
    compact = "".join(value.split())
    if not compact:
        raise SecretMalformed(f"{where}: the {label} is empty; {rotate_hint}")
    try:
        key = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        failure = SecretMalformed(
            f"{where}: the {label} is not valid base64 (standard alphabet, with '=' padding). Store a key file as "
            f"the output of `base64 -w0 KEYFILE`, or {rotate_hint}")
    else:
        if len(key) < KEY_MIN_BYTES:
            raise SecretMalformed(f"{where}: the {label} is {len(key)} bytes; it must be at least {KEY_MIN_BYTES} "
                                  f"({too_short}); {rotate_hint}")
        if len(key) > KEY_MAX_BYTES:
            raise SecretMalformed(f"{where}: the {label} is {len(key)} bytes; clusterforge accepts at most "
                                  f"{KEY_MAX_BYTES} ({too_long}), so this is probably not a key; {rotate_hint}")
        return Secret(key, label)
    raise failure


def check_password(value: Any, where: str, label: str, rotate_hint: str) -> Secret:
    if not isinstance(value, str):
        raise SecretMalformed(f"{where}: the {label} must be text, not {type(value).__name__}")
    if not value:
        raise SecretMalformed(f"{where}: the {label} is empty; {rotate_hint}")
    if any(not c.isprintable() or c.isspace() for c in value):
        raise SecretMalformed(f"{where}: the {label} contains a space, line break or control character, which "
                              f"slurmdbd.conf cannot hold; {rotate_hint}")
    if _PASSWORD_FORBIDDEN.intersection(value):
        raise SecretMalformed(f"{where}: the {label} contains # or \" or \\, which Slurm's config parser treats as a "
                              f"comment, quote or escape; {rotate_hint}")
    return Secret(value.encode("utf-8"), label)


def new_key(label: str) -> tuple[Secret, str]:
    """A fresh random key, and the base64 text to store."""
    key = random_source.token_bytes(NEW_KEY_BYTES)
    return Secret(key, label), base64.b64encode(key).decode("ascii")


def decode_jwt_key(value: Any, where: str, label: str, rotate_hint: str) -> Secret:
    """A JWT key, stored as a munge key is; RFC 7518 sets its least length for HS256 (Slurm takes any)."""
    return decode_key(value, where, label, rotate_hint, too_short="RFC 7518 asks an HS256 key for 256 bits or more",
                      too_long="far more than HS256 makes use of")


def new_jwt_key(label: str) -> tuple[Secret, str]:
    key = random_source.token_bytes(NEW_JWT_KEY_BYTES)
    return Secret(key, label), base64.b64encode(key).decode("ascii")


def new_password(label: str) -> tuple[Secret, str]:
    """A fresh random password, URL-safe so it never meets a character slurmdbd.conf cannot hold."""
    password = random_source.token_urlsafe(NEW_PASSWORD_BYTES)
    return Secret(password.encode("ascii"), label), password


def check_bind_password(value: Any, where: str, label: str, rotate_hint: str) -> Secret:
    """A directory's bind password as sssd.conf can hold it: one line (a line break would end the value and start a
    line SSSD reads as a setting), without blanks at either end (its parser strips them)."""
    if not isinstance(value, str):
        raise SecretMalformed(f"{where}: the {label} must be text, not {type(value).__name__}")
    if not value:
        raise SecretMalformed(f"{where}: the {label} is empty; {rotate_hint}")
    if any(not c.isprintable() for c in value) or value != value.strip():
        raise SecretMalformed(f"{where}: the {label} holds a line break or control character, or begins or ends "
                              f"with a blank, which sssd.conf cannot hold; {rotate_hint}")
    return Secret(value.encode("utf-8"), label)


def no_new_bind_password(label: str) -> tuple[Secret, str]:
    """The directory's password is its admins' (the account exists there, not here): clusterforge never makes one."""
    raise SecretMalformed(f"the {label} is the site directory's: clusterforge cannot make it. Store the password of "
                          "Directory(bind_dn) at Vault(ldap_bind_password) yourself")
