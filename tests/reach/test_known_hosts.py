"""The one known_hosts (reach/known_hosts.py): on a new account (no ~/.ssh), ``ensure`` makes ~/.ssh (0700) and an
empty known_hosts (0600) before pyinfra starts, as OpenSSH makes them, and changes nothing that is there; run as
root, it refuses a HOME, ~/.ssh or known_hosts that is a link or another user's (root's host keys written through
it, that user's ~/.ssh/config read). The deploy and the operations sharing that file over a real sshd:
tests/reach/test_failures.py."""

from __future__ import annotations

import os

import pytest

from clusterforge.errors import ClusterforgeError
from clusterforge.reach import known_hosts

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the refusals are root's (chown)")


@pytest.fixture
def home(tmp_path, monkeypatch):
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


def test_a_fresh_home_gets_ssh_0700_and_an_empty_known_hosts_0600(home):
    made = known_hosts.ensure()
    assert made == home / ".ssh" / "known_hosts" == known_hosts.default()
    assert (home / ".ssh").stat().st_mode & 0o7777 == 0o700
    assert made.stat().st_mode & 0o7777 == 0o600 and made.read_text() == ""


def test_what_is_there_is_left_as_it_is(home):
    (home / ".ssh").mkdir(mode=0o755)
    (home / ".ssh" / "known_hosts").write_text("gpu01 ssh-ed25519 AAAA\n")
    (home / ".ssh" / "known_hosts").chmod(0o644)
    known_hosts.ensure()
    assert (home / ".ssh").stat().st_mode & 0o777 == 0o755
    assert (home / ".ssh" / "known_hosts").read_text() == "gpu01 ssh-ed25519 AAAA\n"
    assert (home / ".ssh" / "known_hosts").stat().st_mode & 0o777 == 0o644


def test_a_home_that_does_not_exist_is_said(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "nowhere"))
    with pytest.raises(ClusterforgeError, match=r"nowhere"):
        known_hosts.ensure()
    assert not (tmp_path / "nowhere").exists()


@root_only
def test_root_with_another_user_s_home_is_refused_and_nothing_is_made(home):
    os.chown(home, 65534, 65534)
    with pytest.raises(ClusterforgeError, match=rf"^{home} is owned by uid 65534, not root's own: .*sudo -H"):
        known_hosts.ensure()
    assert not (home / ".ssh").exists()


@root_only
def test_root_never_writes_through_a_link_another_user_placed(home, tmp_path):
    (home / ".ssh").mkdir(mode=0o700)
    target = tmp_path / "target"
    (home / ".ssh" / "known_hosts").symlink_to(target)
    with pytest.raises(ClusterforgeError, match=r"known_hosts is a link, not root's own"):
        known_hosts.ensure()
    assert not target.exists()
    (home / ".ssh" / "known_hosts").unlink()
    os.chown(home / ".ssh", 65534, 65534)
    with pytest.raises(ClusterforgeError, match=r"\.ssh is owned by uid 65534"):
        known_hosts.ensure()
    assert not (home / ".ssh" / "known_hosts").exists()


def test_plan_and_roll_apply_make_them_before_pyinfra_starts(home, tmp_path):
    """Two of the three places pyinfra starts from (apply's, on a new account too: tests/cli/test_pyinfra_events.py):
    on a new account, the hosts' keys have a file to go to. Every host refused, the commands stop there."""
    from click.testing import CliRunner
    from golden_cases import prod_edited
    from reach.sshd import free_port

    from clusterforge.cli import cli

    inventory = prod_edited(tmp_path, ('host_groups(cluster, ssh_user="root")',
                                       f'host_groups(cluster, ssh_user="root", ssh_hostname="127.0.0.1", '
                                       f'ssh_port={free_port()})'))
    for args in (["plan", str(inventory)], ["roll", "--apply", "--dry-run", str(inventory)]):
        (home / ".ssh" / "known_hosts").unlink(missing_ok=True)
        if (home / ".ssh").exists():
            (home / ".ssh").rmdir()
        result = CliRunner().invoke(cli, args)
        assert result.exit_code != 0, (args, result.output)  # nobody listens there
        assert (home / ".ssh" / "known_hosts").read_text() == "", (args, result.output)
