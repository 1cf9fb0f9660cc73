"""The sudo rules, stated once for the deploy (engine/remote.py) and the operations (ssh.py): clusterforge never
gives sudo a password, neither asked at a terminal (`plan`, `roll` and a run without one have none) nor from the
inventory (pyinfra hands it to sudo on the command line of every remote command, ``env PYINFRA_SUDO_PASSWORD=...
sudo -A``, where every user of the host reads it in ``ps``). A host whose sudo asks for one is told so, in the same
words whoever asked."""

from __future__ import annotations

# What sudo says when it wants a password it was not given (sudo, sudo-rs), and sudo without a terminal.
PASSWORD_ASKED = ("a password is required", "interactive authentication is required", "a terminal is required")


def asks_password(said: str) -> bool:
    """Whether sudo's words say it wants a password."""
    return any(text in said for text in PASSWORD_ASKED)


def refusal(user: str, said: str) -> str:
    """What a sudo that ran nothing for ``user`` is said to have done, from its words ``said``: asked for a
    password, or refused the user outright (no sudo, not in sudoers)."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    last = lines[-1] if lines else "no answer"
    if asks_password(said):
        return (f"sudo asks {user} for a password ({last}). Give {user} sudo without a password on the host "
                "(NOPASSWD in sudoers): clusterforge gives sudo none, since pyinfra would put it on the command line "
                "of every command there")
    return f"{user} cannot run commands through sudo there ({last}), which the inventory asks for (sudo=True)"


def password_given(user: str) -> str:
    """What an inventory that gives ``user``'s sudo password (pyinfra's ``_sudo_password``) is told."""
    return (f"the inventory gives {user}'s sudo password (_sudo_password), which pyinfra would put on the command "
            f"line of every command it runs there, readable by every user of the host in ps. Give {user} sudo "
            "without a password on the host (NOPASSWD in sudoers, for that user alone) and remove _sudo_password")
