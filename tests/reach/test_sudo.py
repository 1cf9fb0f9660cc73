"""The sudo rules, stated once (reach/sudo.py): a sudo that asks for a password is said in the same words by the
deploy (engine/remote.py's check before the host-state read, over pyinfra) and by the operations (the first
command `check`, `roll`, `accept` and `admit` run, through testinfra's sudo), both asking this machine's real sudo as
a user it wants a password from."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess

import pytest
from deploy.test_sudo import refusal

from clusterforge.reach import sudo
from clusterforge.reach.hosts import Reach
from clusterforge.reach.ssh import COMMAND_TIMEOUT, answers
from clusterforge.slurm.commands import Answer


def as_nobody_through_testinfras_sudo(command: str) -> Answer:
    """The operations' runner (reach/ssh.py: its bound, then testinfra's sudo), run as nobody here instead of over
    SSH: this machine's real sudo answers, without a terminal, as it does to an SSH command."""
    import testinfra

    wrapped = testinfra.get_host("local://", sudo=True).backend.get_command(
        f"timeout {COMMAND_TIMEOUT} sh -c {shlex.quote(command)}")
    done = subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c", wrapped], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, start_new_session=True, check=False)
    return Answer(done.returncode, done.stdout, done.stderr)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None,
                    reason="runs sudo as nobody, whom it asks for a password")
def test_a_password_asking_sudo_is_said_alike_by_the_deploy_and_the_operations(tmp_path):
    said_by_sudo = "sudo: a password is required"
    sentence = sudo.refusal("nobody", said_by_sudo)
    assert sentence.startswith(f"sudo asks nobody for a password ({said_by_sudo}). Give nobody sudo without a "
                               "password on the host (NOPASSWD in sudoers)")

    deploy = refusal(tmp_path, f'exec runuser -u nobody -- {shutil.which("sudo")} "$@"')
    assert deploy.returncode != 0
    assert f"@local: {sentence}. Nothing was changed on this host" in deploy.stderr

    operations = answers(as_nobody_through_testinfras_sudo, Reach("@local", "localhost", user="nobody", sudo=True))
    assert operations == sentence


def test_the_words_of_sudo_and_sudo_rs_that_ask_for_a_password():
    for said in ["sudo: a terminal is required to read the password; either use the -S option to read from standard "
                 "input or configure an askpass helper\nsudo: a password is required\n",
                 "sudo-rs: interactive authentication is required\n"]:
        assert sudo.asks_password(said)
        assert sudo.refusal("admin", said).startswith(f"sudo asks admin for a password ({said.splitlines()[-1]})")
    not_allowed = "sudo: admin is not in the sudoers file.\n"
    assert not sudo.asks_password(not_allowed)
    assert sudo.refusal("admin", not_allowed) == ("admin cannot run commands through sudo there (sudo: admin is not "
                                                  "in the sudoers file.), which the inventory asks for (sudo=True)")
    assert sudo.refusal("admin", "") == ("admin cannot run commands through sudo there (no answer), which the "
                                         "inventory asks for (sudo=True)")
