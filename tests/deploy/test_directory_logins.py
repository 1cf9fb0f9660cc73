"""How a person of a site directory logs in, on simulated hosts: sshd on every host asks SSSD for the keys the
directory holds (its drop-in, checked and reloaded once, owed until done), and a login host makes a person's home at
their first login (clusterforge's pam_mkhomedir profile, enabled in common-session); compute nodes and the
controller make no homes. A second run is quiet; a run killed before sshd's reload owes it to the next."""

from __future__ import annotations

from deploy.fakedeploy import dump
from deploy.simhost import Sim
from deploy.test_directory import HOSTS, cluster

DROPIN = "/etc/ssh/sshd_config.d/clusterforge-directory.conf"
PROFILE = "/usr/share/pam-configs/clusterforge-mkhomedir"
RELOAD = "sshd -t && systemctl try-reload-or-restart ssh.service"


def test_keys_from_the_directory_everywhere_and_homes_at_first_login_on_login_hosts(tmp_path):
    sim = cluster(tmp_path)
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    order = [f"{h} {c}" for h, c in first.order]
    for name in HOSTS:
        host = first.sims[name]
        dropin = host.content(DROPIN).decode()
        assert "AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys\n" in dropin, name
        assert "AuthorizedKeysCommandUser nobody\n" in dropin, name
        assert first.ran(name, RELOAD), name
        # sshd is told once SSSD runs: it is SSSD that answers the command
        assert order.index(f"{name} systemctl start sssd.service") < order.index(f"{name} {RELOAD}"), name
        assert "ldap_user_ssh_public_key = sshPublicKey" in host.content("/etc/sssd/sssd.conf").decode()
    login = first.sims["login1"]
    assert "pam_mkhomedir.so umask=0077 skel=/etc/skel" in login.content(PROFILE).decode()
    assert "session optional\t\t\tpam_mkhomedir.so umask=0077" in login.content("/etc/pam.d/common-session").decode()
    for name in ("ctl", "gpu01", "gpu04"):
        assert first.sims[name].content(PROFILE) is None and not first.ran(name, "pam-auth-update"), name
    assert sim.deploy().operations() == []


def test_a_run_killed_before_the_reload_still_owes_it_and_a_changed_dropin_is_put_back(tmp_path):
    sim = cluster(tmp_path)
    killed = sim.deploy(fail="gpu01:systemctl try-reload-or-restart ssh.service")
    assert killed.returncode != 0
    again = sim.deploy()
    assert again.returncode == 0, dump(again)
    assert again.ran("gpu01", RELOAD)
    assert not any(again.ran(name, RELOAD) for name in ("ctl", "login1", "gpu04"))
    # A drop-in changed by hand is put back; sshd, which read the deploy's before, need not read it again.
    host = Sim.load(sim.directory / "gpu01.json")
    host.put(DROPIN, b"AuthorizedKeysCommand /bin/false\n")
    host.save(sim.directory / "gpu01.json")
    back = sim.deploy()
    assert back.returncode == 0 and b"sss_ssh_authorizedkeys" in back.sims["gpu01"].content(DROPIN), dump(back)
    assert sim.deploy().operations() == []


def test_common_session_without_the_line_gets_it_again(tmp_path):
    sim = cluster(tmp_path)
    assert sim.deploy().returncode == 0
    host = Sim.load(sim.directory / "login1.json")
    host.put("/etc/pam.d/common-session", b"session required pam_unix.so\n")
    host.save(sim.directory / "login1.json")
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    assert run.ran("login1", "pam-auth-update --enable clusterforge-mkhomedir")
    assert sim.deploy().operations() == []
