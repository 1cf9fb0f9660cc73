"""Reaching a host as its inventory says: as the SSH user, through sudo where the host data asks for it.

pyinfra applies its own host data (``_sudo``, ``_sudo_user``, ...) to operations and facts, but not to a host's
``run_shell_command`` or ``put_file`` called directly (a build copied between hosts, the controller's drains): those
go through ``run`` and ``put`` here, with the same arguments. A secret never goes through pyinfra's sudo upload,
which stages the file in a temporary path the SSH user owns and can read: ``secret_write`` hands it on the standard
input of a command run under sudo, which writes the file with a umask that lets nobody else read it.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pyinfra.api import FileUploadCommand, StringCommand

from ..errors import DeployError, for_pyinfra
from ..reach import hosts, sudo
from ..secrets import Secret

if TYPE_CHECKING:
    from pyinfra.api import Host as PyinfraHost

# Each line sudo says, prefixed (refuse_sudo_password).
_SAID = "sudo said: "


def sudo_arguments(host: PyinfraHost) -> dict[str, Any]:
    """The sudo settings of the host's data, for a command pyinfra does not run as an operation."""
    return hosts.sudo_arguments(host.data)


def uses_sudo(host: PyinfraHost) -> bool:
    return hosts.uses_sudo(host.data)


def run(host: PyinfraHost, command: str, **arguments: Any):
    """``host.run_shell_command`` as the host's operations run: through sudo where its data says so."""
    return host.run_shell_command(command, **sudo_arguments(host), **arguments)


# mktemp -d makes the directory 0700 whatever the umask, under a name of ten random characters it retries until
# no one has taken it; run as the SSH user, it is theirs.
_MAKE_PRIVATE = "mktemp -d -t clusterforge.XXXXXXXXXX"


@contextmanager
def private_directory(host: PyinfraHost) -> Iterator[str]:
    """A directory on the host that only the SSH user can enter, made for one copy and removed after it."""
    ok, output = host.run_shell_command(_MAKE_PRIVATE)  # no sudo arguments: as the SSH user
    path = output.stdout.strip() if ok else ""
    if not path.startswith("/") or any(c.isspace() or c in "'\"\\$`" for c in path):
        raise for_pyinfra(DeployError(f"{host.name}: cannot make a private staging directory for a copy through "
                                      f"sudo ({_MAKE_PRIVATE}: {output.stderr.strip() or path or 'no answer'})"))
    try:
        yield path
    finally:
        host.run_shell_command(StringCommand("rm", "-rf", path))


def put(host: PyinfraHost, source: Any, path: str) -> bool:
    """``host.put_file`` through sudo where the host's data says so (not for a secret: ``secret_write``), staged in
    a private directory of its own."""
    return _put(host, source, path, **sudo_arguments(host))


def _put(host: PyinfraHost, source: Any, path: str, **arguments: Any) -> bool:
    """``host.put_file`` with these connector arguments; through sudo, staged in a private directory of its own."""
    if not arguments.get("_sudo"):
        return host.put_file(source, path, **arguments)
    with private_directory(host) as directory:
        return host.put_file(source, path, remote_temp_filename=f"{directory}/upload", **arguments)


def get(host: PyinfraHost, path: str, destination: Any) -> bool:
    """``host.get_file`` through sudo where the host's data says so (a root-only file the SSH user cannot read),
    staged in a private directory of its own: root's copy never follows a link someone made in /tmp."""
    arguments = sudo_arguments(host)
    if not uses_sudo(host):
        return host.get_file(path, destination, **arguments)
    with private_directory(host) as directory:
        return host.get_file(path, destination, remote_temp_filename=f"{directory}/download", **arguments)


class StagedUpload(FileUploadCommand):
    """An operation's upload (pyinfra's FileUploadCommand), staged through sudo in a private directory of its own
    rather than at pyinfra's predictable name in /tmp."""

    def execute(self, state: Any, host: PyinfraHost, connector_arguments: Any) -> bool:
        connector_arguments.update(self.connector_arguments)
        return _put(host, self.src, self.dest, print_output=state.print_output, print_input=state.print_input,
                    **connector_arguments)


class _SecretStdin:
    """A secret in base64 on a command's standard input (pyinfra writes what ``readlines`` gives, line by line);
    its repr is the secret's label."""

    def __init__(self, secret: Secret) -> None:
        self._secret = secret

    def readlines(self) -> list[str]:
        return [base64.b64encode(self._secret.reveal()).decode()]

    def __repr__(self) -> str:
        return repr(self._secret)

    __str__ = __repr__


def secret_write(secret: Secret, path: str) -> StringCommand:
    """The command that writes ``secret`` to ``path`` from its standard input, as the operation's user (root
    through sudo): no copy anywhere else, and a new file readable by its owner alone (an existing file keeps its
    mode, which the deploy has set before). Only the path is on the command line."""
    script = f"umask 077 && base64 -d > {shlex.quote(path)}"
    return StringCommand("sh", "-c", shlex.quote(script), _stdin=_SecretStdin(secret))


def refuse_sudo_password(host: PyinfraHost) -> None:
    """Stop before anything runs on a host whose sudo asks its SSH user for a password the inventory does not
    give, or where the SSH user has no sudo at all, and on one whose inventory gives the password: the rules and
    their words are reach/sudo.py's."""
    if not uses_sudo(host):
        return
    user = hosts.Reach.of(host.name, host.data).who
    if host.data.get("_sudo_password"):
        raise for_pyinfra(DeployError(f"{host.name}: {sudo.password_given(user)}. Nothing was changed on this host"))
    # Each line of sudo's is prefixed: pyinfra answers a line that is exactly sudo's by prompting on the terminal.
    ok, output = host.run_shell_command(
        f"said=$(sudo -n true 2>&1) || {{ printf '%s\\n' \"$said\" | sed 's/^/{_SAID}/' >&2; exit 1; }}", _timeout=60)
    if ok:
        return
    said = "\n".join(line.removeprefix(_SAID) for line in output.stderr.splitlines())
    raise for_pyinfra(DeployError(f"{host.name}: {sudo.refusal(user, said)}. Nothing was changed on this host"))
