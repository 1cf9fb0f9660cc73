"""A service host's SSH rule (render/access.py, render/sssd.py): root, the admin group, the deploy's own login and
service_host_groups, nobody else. The block goes first into Debian's own sshd stack and comes out again leaving it
byte for byte; the list, the message and sshd's drop-in; SSSD's access provider on a service host.

And as Debian's own components read them, in Debian 12's and 13's roots (openssh-server, pamtester; built by
tests/realslurm/build-debian-root.sh sshd-bookworm|sshd-trixie, in a private mount namespace over an overlay, so the
cached root is never changed): `sshd -t` takes the drop-in; a real sshd refuses a person's key login with the rule's
message (sshd hands an account-stage PAM message to the client as a banner) and offers them no password; the admin
group, a service_host_groups member, the deploy's login and root get in."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from clusters import small_cluster
from needs import skip_or_fail
from ports import free_port
from reach.sshd import OVERLAY

from clusterforge.model import Group, Host, Identity, Person, resolve
from clusterforge.render import access, sssd

CACHE = Path(os.environ.get("CLUSTERFORGE_CACHE", "/var/cache/clusterforge"))
DEBIAN_13_SSHD = access.DEBIAN_SSHD.replace("pam_env.so user_readenv=1 envfile", "pam_env.so envfile")


def valid(**fields):
    spec = Identity(people=(Person("alice", uid=20001), Person("carol", uid=20003, groups=("ops",))),
                    groups=(Group("ops", gid=30000), Group("hpcstaff", gid=30001)), admin_group="ops", **fields)
    return resolve(small_cluster(identity=spec, login=(Host("login1", address="10.9.0.7"),)))


@pytest.mark.parametrize("debian", [access.DEBIAN_SSHD, DEBIAN_13_SSHD], ids=["12", "13"])
def test_the_block_goes_first_in_debians_account_stack_and_comes_out_leaving_it_as_it_was(debian):
    stack = access.service_sshd_pam(debian)
    lines = stack.splitlines()
    first_account = next(i for i, line in enumerate(lines) if line.startswith(("account", "@include common-account")))
    assert lines[first_account - 1] == access.SERVICE_BEGIN  # above it: the block, and nothing between
    assert lines[first_account:first_account + 3] == [
        f"account    [success=2 default=ignore]  pam_access.so accessfile={access.SERVICE_ACCESS_CONF}",
        f"account    optional     pam_echo.so file={access.SERVICE_MESSAGE}",
        "account    requisite    pam_deny.so"]
    assert lines[first_account + 3] == access.SERVICE_END
    assert access.service_sshd_pam(stack) == stack  # once, however often
    assert access.without_service_block(stack) == debian
    # a block someone cut short comes out too, and nothing of theirs with it
    half = stack.replace(access.SERVICE_END + "\n", "")
    assert access.without_service_block(half) == debian
    assert access.has_service_block(stack) and not access.has_service_block(debian)


def test_a_stack_without_an_account_line_gets_the_block_before_its_session_stack():
    stack = access.service_sshd_pam("@include common-auth\nsession required pam_unix.so\n")
    assert stack.index("pam_access.so") < stack.index("session required pam_unix.so")


def test_the_list_the_message_and_the_dropin_name_who_gets_in():
    found = valid(service_host_groups=("hpcstaff",))
    assert access.service_access_conf(found, ("vagrant",)).splitlines()[2:] == [
        "+:root:ALL", "+:vagrant:ALL", "+:(ops):ALL", "+:(hpcstaff):ALL", "-:ALL:ALL"]
    said = access.service_message(found)
    assert said == ("Access denied by clusterforge: %h is a service host of cluster t (its controller, database, NFS "
                    "or monitoring host), where only root, the members of ops and hpcstaff, and the user the deploy "
                    f"logs in as may log in ({access.SERVICE_ACCESS_CONF}; a site lets more groups in with "
                    "Identity(service_host_groups=...)). Log in to a login host (login1) instead.\n")
    dropin = access.service_sshd_dropin(found, ("vagrant",))
    assert "Match User *,!root,!vagrant Group *,!ops,!hpcstaff\n" in dropin and dropin.endswith("Match all\n")
    # nobody but root and the deploy
    bare = resolve(small_cluster(identity=Identity(people=(Person("alice", uid=20001),))))
    assert access.service_access_conf(bare).splitlines()[2:] == ["+:root:ALL", "-:ALL:ALL"]
    assert "only root, and the user the deploy logs in as may log in" in access.service_message(bare)
    assert "Match User *,!root Group *\n" in access.service_sshd_dropin(bare)


def test_which_hosts_are_service_hosts():
    assert access.service_host(("controller",)) and access.service_host(("database", "nfs", "monitoring", "rest"))
    assert not access.service_host(("controller", "login")) and not access.service_host(("controller", "compute"))
    assert not access.guards_service_hosts(resolve(small_cluster()))


def test_sssd_on_a_service_host_lets_in_the_admin_and_service_groups_or_nobody():
    from golden_cases import cases

    case = next(c for c in cases() if c.name == "directory")
    directory = case.cluster().identity.directory
    spec = Identity(directory=directory, admin_group="hpc-admins", service_host_groups=("hpc-staff",))
    found = resolve(case.cluster().model_copy(update={"identity": spec}))
    assert sssd.access_rule(found, ("controller", "database")) == ("simple", ("hpc-admins", "hpc-staff"), ())
    assert sssd.access_rule(found, ("nfs",), ("jdoe",)) == ("simple", ("hpc-admins", "hpc-staff"), ("jdoe",))
    assert sssd.access_rule(found, ("compute",)) == ("permit", (), ())
    nobody = resolve(case.cluster().model_copy(update={"identity": Identity(directory=directory)}))
    # SSSD's simple provider with empty lists lets everyone in: deny instead
    assert sssd.access_rule(nobody, ("controller",)) == ("deny", (), ())
    text = sssd.sssd_conf(found, ("controller",), ("jdoe",))
    assert "access_provider = simple\nsimple_allow_groups = hpc-admins, hpc-staff\nsimple_allow_users = jdoe\n" in text


# --- as Debian's sshd and PAM read them --------------------------------------------------------------------------

SCENARIO = "set -u\n" + OVERLAY + """\
chroot "$M" sh -e -c '
  groupadd ops; groupadd hpcstaff
  useradd -m alice; useradd -m -G ops carol; useradd -m -G hpcstaff dan; useradd -m vagrant
  for u in alice carol dan vagrant root; do
    h=$(getent passwd $u | cut -d: -f6); mkdir -p $h/.ssh; cp /tmp/key.pub $h/.ssh/authorized_keys
    chown -R $u: $h/.ssh; chmod 700 $h/.ssh
  done
  echo "alice:Secret-pw1" | chpasswd; echo "carol:Secret-pw1" | chpasswd
  mkdir -p /run/sshd
  [ -f /etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -q -A'
echo "@check $(chroot "$M" /usr/sbin/sshd -t 2>&1 && echo ok)"
chroot "$M" /usr/sbin/sshd -D -e -p {port} -o ListenAddress=127.0.0.1 -o PermitRootLogin=prohibit-password \
    2>{upper}/../sshd.log &
sshd=$!
trap 'kill $sshd; wait $sshd' EXIT
for i in $(seq 50); do (echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; sleep 0.1; done
for u in alice carol dan vagrant root; do
  out=$(ssh -p {port} -i {key} -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
        -o LogLevel=INFO -o BatchMode=yes -o PreferredAuthentications=publickey $u@127.0.0.1 'id -un' 2>&1)
  echo "@key $u $? $(echo "$out" | tr '\\r\\n' '  ')"
  out=$(ssh -p {port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
        -o PreferredAuthentications=password,keyboard-interactive $u@127.0.0.1 true 2>&1)
  echo "@password $u $(echo "$out" | tr '\\r\\n' '  ')"
done
"""


def roots() -> list[str]:
    return ["bookworm", "trixie"]


@pytest.mark.parametrize("dist", roots())
def test_debians_sshd_refuses_a_person_with_the_rules_message_and_takes_the_admins(dist, tmp_path):
    root = CACHE / f"sshd-{dist}"
    if not (root / ".clusterforge-complete").exists() or os.geteuid() != 0 or shutil.which("unshare") is None:
        skip_or_fail(f"needs root and the cached Debian {dist} root with openssh-server and pamtester at {root} "
                     f"(tests/realslurm/build-debian-root.sh sshd-{dist})")
    found = valid(service_host_groups=("hpcstaff",))
    upper, work, merged = (tmp_path / name for name in ("upper", "work", "merged"))
    for path in (upper, work, merged):
        path.mkdir()
    installed = (root / "etc/pam.d/sshd").read_text()
    files = {access.SSHD_PAM: access.service_sshd_pam(installed),
             access.SERVICE_ACCESS_CONF: access.service_access_conf(found, ("vagrant",)),
             access.SERVICE_MESSAGE: access.service_message(found),
             access.SERVICE_SSHD_DROPIN: access.service_sshd_dropin(found, ("vagrant",))}
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "key")], check=True)
    for path, text in {**files, "/tmp/key.pub": (tmp_path / "key.pub").read_text()}.items():
        (upper / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (upper / path.lstrip("/")).write_text(text)
    port = free_port()
    script = SCENARIO.format(merged=merged, root=root, upper=upper, work=work, port=port, key=tmp_path / "key")
    ran = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
                         capture_output=True, text=True, timeout=120)
    lines = {tuple(line.split()[:2]): line for line in ran.stdout.split("\n") if line.startswith("@")}
    log = (tmp_path / "sshd.log").read_text() if (tmp_path / "sshd.log").exists() else ""
    assert lines.get(("@check", "ok")), (ran.stdout, ran.stderr, log)
    refused = lines[("@key", "alice")]
    assert refused.startswith("@key alice 255 ") and "Access denied by clusterforge: " in refused, (refused, log)
    assert f"({access.SERVICE_ACCESS_CONF};" in refused and "is a service host of cluster t" in refused
    for user in ("carol", "dan", "vagrant", "root"):
        said = lines[("@key", user)]
        assert said.startswith(f"@key {user} 0 ") and said.split()[-1] == user, (said, log)
    # A person is offered no password at all; the admin group still is (their own matter)
    assert "Permission denied (publickey)." in lines[("@password", "alice")], lines[("@password", "alice")]
    assert "password" in lines[("@password", "carol")].split("Permission denied (", 1)[1], lines
