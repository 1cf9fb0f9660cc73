"""The one known_hosts the deploy and the operations share, where the inventory names none (``ssh_known_hosts_file``):
``~/.ssh/known_hosts`` of ``$HOME``, the file pyinfra's SSH connector (paramiko) reads, and appends a new host's key
to under its default policy, accept-new.

paramiko expands ``~`` from ``$HOME``, OpenSSH from the password database: where the two differ (``sudo -E``, a
container, a test) they would be two files, so the operations' ssh_config names the path itself (hosts.py).

pyinfra cannot append to a file whose directory is missing, and reports it as "Could not connect (No such file or
directory: '~/.ssh/known_hosts')": on a new account, every host. ``ensure`` makes ``~/.ssh`` (0700) and an empty
``known_hosts`` (0600) first, as OpenSSH makes them, before pyinfra starts (`apply`, `plan`, `roll --apply`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import ClusterforgeError


def default() -> Path:
    """``$HOME/.ssh/known_hosts``, as pyinfra's connector expands it."""
    return Path(os.path.expanduser("~/.ssh/known_hosts"))


def ensure() -> Path:
    """``~/.ssh`` (0700) and an empty ``~/.ssh/known_hosts`` (0600) where missing; nothing changed where they are.
    Run as root, refused where ``$HOME``, ``~/.ssh`` or the file is a link or someone else's (root with another
    user's HOME, ``sudo -E``): pyinfra would append root's host keys through it, and read that user's
    ``~/.ssh/config`` (a ProxyCommand, run as root)."""
    known = default()
    directory, home = known.parent, known.parent.parent
    root = os.geteuid() == 0
    if root:
        _own(home)
    try:
        os.mkdir(directory, 0o700)  # never through a link: an existing one is EEXIST, and checked below
    except FileExistsError:
        pass
    except OSError as error:
        raise ClusterforgeError(f"{directory}: cannot be made ({error.strerror}): pyinfra records the hosts' keys "
                                "in it; set HOME to your home directory") from None
    if root:
        _own(directory)
    try:
        os.close(os.open(known, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        pass
    except OSError as error:
        raise ClusterforgeError(f"{known}: cannot be made ({error.strerror}): pyinfra records the hosts' keys "
                                "in it") from None
    if root:
        _own(known)
    return known


def _own(path: Path) -> None:
    """Refused unless ``path`` is root's own, and no link."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        raise ClusterforgeError(f"{path}: no such directory: set HOME to root's home directory") from None
    if stat.S_ISLNK(found.st_mode) or found.st_uid != 0:
        what = "a link" if stat.S_ISLNK(found.st_mode) else f"owned by uid {found.st_uid}"
        raise ClusterforgeError(f"{path} is {what}, not root's own: clusterforge runs as root and would write "
                                "host keys there; run it with root's own HOME (sudo -H, not sudo -E)")
