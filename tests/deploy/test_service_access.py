"""Who logs in to a service host (the controller, the database host, the NFS server, the monitoring host: neither a
login host nor a compute node), on simulated hosts: root, the admin group, the user the deploy logs in as and the
inventory's service_host_groups, declared people and the directory's alike; everyone else refused by sshd's PAM
account stack with a message naming the rule, and offered no password. Debian's stack stays the host's own: the
rule is a block first in its account stack, taken out again when the inventory has no Identity any more. sshd reads
its drop-in once, checked, owed until done. Login hosts and compute nodes keep their own rules. (The stack's text as
Debian's PAM and sshd read it: tests/render/test_access_service.py.)"""

from __future__ import annotations

from deploy.fakedeploy import SimCluster, dump
from deploy.test_directory import cluster as directory_cluster
from deploy.test_identity import ALICE, DEBIAN_SSHD, debian_sshd, identity

from clusterforge.render import access

PAM = "/etc/pam.d/sshd"
LIST = "/etc/security/access-clusterforge-service.conf"
MESSAGE = "/etc/security/clusterforge-service-host.txt"
DROPIN = "/etc/ssh/sshd_config.d/clusterforge-service-host.conf"
RELOAD = "sshd -t && systemctl try-reload-or-restart ssh.service"
RECORD = "/var/lib/clusterforge/applied/ssh-service-host"


def as_admin(sim: SimCluster) -> None:
    """The deploy logs in as admin, with sudo (as the test cluster does as vagrant)."""
    hosts = sim.directory / "hosts.py"
    text = hosts.read_text()
    hosts.write_text(text.replace("host_groups(_cluster, fake_delay=0", 'host_groups(_cluster, ssh_user="admin", '
                                                                       "fake_delay=0"))


def listed(text: bytes | None) -> list[str]:
    return [line for line in (text or b"").decode().splitlines() if not line.startswith("#")]


def test_the_controller_admits_root_the_admins_and_the_deploys_login_and_a_second_run_is_quiet(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, extra=', service_host_groups=("hpcstaff",)').replace(
        'groups=(Group("vision", gid=30001),)', 'groups=(Group("vision", gid=30001), Group("hpcstaff", gid=30002))'))
    as_admin(sim)
    debian_sshd(sim, "ctl", "login1")
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    ctl = first.sims["ctl"]
    stack = ctl.content(PAM).decode()
    # Debian's stack, the block first in its account stack and nothing else changed
    assert access.without_service_block(stack) == DEBIAN_SSHD
    block = stack.index(access.SERVICE_BEGIN)
    assert block < stack.index("account    required     pam_nologin.so") < stack.index("@include common-account")
    assert f"account    [success=2 default=ignore]  pam_access.so accessfile={LIST}\n" in stack
    assert f"account    optional     pam_echo.so file={MESSAGE}\n" in stack
    assert listed(ctl.content(LIST)) == ["+:root:ALL", "+:admin:ALL", "+:(vision):ALL", "+:(hpcstaff):ALL", "-:ALL:ALL"]
    said = ctl.content(MESSAGE).decode()
    assert said.startswith("Access denied by clusterforge: %h is a service host of cluster") and LIST in said
    assert "root, the members of vision and hpcstaff, and the user the deploy logs in as" in said
    assert "Log in to a login host (login1) instead." in said
    dropin = ctl.content(DROPIN).decode()
    assert "UsePAM yes\n" in dropin and "Match User *,!root,!admin Group *,!vision,!hpcstaff\n" in dropin
    assert "\tPasswordAuthentication no\n" in dropin and dropin.endswith("Match all\n")
    order = [f"{h} {c}" for h, c in first.order]
    # the list and the message before the stack that names them; the stack renamed into place, never half-written
    assert order.index(f"ctl upload {LIST}") < order.index(f"ctl upload {PAM}.clusterforge-new") < order.index(
        f"ctl mv -f {PAM}.clusterforge-new {PAM}")
    assert order.index(f"ctl upload {DROPIN}") < order.index(f"ctl {RELOAD}")
    assert ctl.content(RECORD) is not None
    # a login host keeps Debian's stack, a compute node its adopt rule; neither has anything of a service host's
    assert first.sims["login1"].content(PAM) == DEBIAN_SSHD.encode()
    gpu = first.sims["gpu01"]
    assert "pam_slurm_adopt" in gpu.content(PAM).decode() and access.SERVICE_BEGIN not in gpu.content(PAM).decode()
    for name in ("login1", "gpu01", "gpu04"):
        assert not {LIST, MESSAGE, DROPIN} & set(first.sims[name].files), name
        assert not first.ran(name, RELOAD), name
    again = sim.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_adopt_off_keeps_the_rule_and_no_identity_any_more_gives_debians_stack_back(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, extra=", adopt=False"))
    debian_sshd(sim, "ctl")
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    assert access.SERVICE_BEGIN in first.sims["ctl"].content(PAM).decode()
    assert listed(first.sims["ctl"].content(LIST)) == ["+:root:ALL", "+:(vision):ALL", "-:ALL:ALL"]
    assert PAM not in first.sims["gpu01"].files  # adopt off: the compute node's stack is Debian's
    # The inventory's Identity gone: the block out of the stack, the rest as it was; the files gone; sshd told.
    sim.set_inventory(extra="")
    off = sim.deploy()
    assert off.returncode == 0, dump(off)
    ctl = off.sims["ctl"]
    assert ctl.content(PAM) == DEBIAN_SSHD.encode()
    assert not {LIST, MESSAGE, DROPIN} & set(ctl.files)
    assert off.ran("ctl", RELOAD) and ctl.content(RECORD) == b"absent\n"
    again = sim.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_without_an_identity_the_hosts_are_left_as_they_are(tmp_path):
    sim = SimCluster(tmp_path / "sim")
    debian_sshd(sim, "ctl")
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    ctl = run.sims["ctl"]
    assert ctl.content(PAM) == DEBIAN_SSHD.encode() and not {LIST, MESSAGE, DROPIN, RECORD} & set(ctl.files)
    assert not any(run.ran(name, RELOAD) for name in run.sims)


def test_a_run_killed_before_sshd_read_the_dropin_still_owes_it(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE))
    killed = sim.deploy(fail=f"ctl:{RELOAD}")
    assert killed.returncode != 0
    assert DROPIN in killed.sims["ctl"].files and RECORD not in killed.sims["ctl"].files
    again = sim.deploy()
    assert again.returncode == 0, dump(again)
    assert again.ran("ctl", RELOAD)
    assert sim.deploy().operations() == []


def test_the_directorys_people_meet_the_same_rule_in_sssd(tmp_path):
    sim = directory_cluster(tmp_path, extra="")
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    ctl = first.sims["ctl"].content("/etc/sssd/sssd.conf").decode()
    # the admin group alone: SSSD's simple provider, as sshd's own stack there says
    assert "access_provider = simple\nsimple_allow_groups = hpc-admins\n" in ctl
    assert listed(first.sims["ctl"].content(LIST)) == ["+:root:ALL", "+:(hpc-admins):ALL", "-:ALL:ALL"]
    login = first.sims["login1"].content("/etc/sssd/sssd.conf").decode()
    assert "simple_allow_groups = hpc-users, hpc-admins\n" in login
    assert "access_provider = permit\n" in first.sims["gpu01"].content("/etc/sssd/sssd.conf").decode()
    # the directory's key lookup stays on the controller (the admins log in with it); the account stack refuses
    # the others, and sshd offers them no password
    assert first.sims["ctl"].content("/etc/ssh/sshd_config.d/clusterforge-directory.conf") is not None
    assert "Match User *,!root Group *,!hpc-admins\n" in first.sims["ctl"].content(DROPIN).decode()
    assert sim.deploy().operations() == []
