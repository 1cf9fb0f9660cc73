"""A site directory through the whole deploy on simulated hosts: SSSD's packages in each host's one install, the pinned
CA and sssd.conf (0600 root, the bind password from Vault) on every host, nscd off, sssd started and nsswitch.conf
sending passwd and group to it, all before the first Slurm daemon starts; a quiet second run; a change of the
directory's settings restarts sssd (and flushes its cache) and nothing of Slurm, and a run killed before that restart
leaves it owed; the password never in pyinfra's output or a plan; a host whose OS has no SSSD refused before anything
changes."""

from __future__ import annotations

import hashlib

from deploy.fakedeploy import SimCluster, dump
from deploy.simhost import Sim

PASSWORD = b"Bind-Secr3t-for-sssd"
CA = b"-----BEGIN CERTIFICATE-----\nMIIBsite-ca\n-----END CERTIFICATE-----\n"
HOSTS = ("ctl", "login1", "gpu01", "gpu04")
SLURM_UNITS = ("munge", "slurmctld", "slurmd", "slurmdbd", "sackd")


def directory(sim_dir, uris: str = '("ldap://ldap1.example.org",)', extra: str = "") -> str:
    ca = sim_dir / "ldap-ca.pem"
    ca.write_bytes(CA)
    return (f'identity=Identity(directory=Directory(uris={uris}, base_dn="dc=example,dc=org", '
            f'ca_certificate=Artifact(source="{ca}", sha256="{hashlib.sha256(CA).hexdigest()}"), '
            f'bind_dn="cn=sssd,ou=services,dc=example,dc=org", login_group="hpc-users"{extra}), '
            'admin_group="hpc-admins")')


def cluster(tmp_path, version: str = "22.05", **fields: str) -> SimCluster:
    sim = SimCluster(tmp_path / "sim", version=version)
    sim.set_inventory(version, extra=directory(sim.directory, **fields), secrets={"ldap-bind-password": PASSWORD})
    return sim


def test_every_host_reads_the_directory_before_slurm_starts_and_a_second_run_is_quiet(tmp_path):
    sim = cluster(tmp_path)
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    order = [f"{h} {c}" for h, c in first.order]
    for name in HOSTS:
        host = first.sims[name]
        assert {"sssd-common", "sssd-ldap", "sssd-tools", "libnss-sss", "libpam-sss"} <= set(host.packages), name
        assert host.content("/etc/sssd/clusterforge-ldap-ca.pem") == CA, name
        conf = host.content("/etc/sssd/sssd.conf").decode()
        assert conf.endswith(f"ldap_default_authtok = {PASSWORD.decode()}\n"), name
        assert "ldap_id_use_start_tls = true" in conf and "ldap_tls_reqcert = demand" in conf, name
        assert {k: host.files["/etc/sssd/sssd.conf"][k] for k in ("user", "group", "mode")} == {
            "user": "root", "group": "root", "mode": "600"}, name
        assert "/etc/sssd/sssd.conf" not in host.exposed, name  # never readable by others, not for a moment
        assert host.units["sssd.service"] == {"active": True, "enabled": True}, name
        nsswitch = host.content("/etc/nsswitch.conf").decode()
        assert "passwd:         files systemd sss" in nsswitch and "group:          files systemd sss" in nsswitch
        assert not first.ran(name, "sss_cache")  # a first start has nothing cached to drop
    # the login host lets the login group and the admins in; elsewhere every directory user (compute: adopt decides)
    assert "simple_allow_groups = hpc-users, hpc-admins" in first.sims["login1"].content("/etc/sssd/sssd.conf").decode()
    assert "access_provider = permit" in first.sims["gpu01"].content("/etc/sssd/sssd.conf").decode()
    started = min(order.index(f"{h} systemctl start {u}.service") for h in first.sims for u in SLURM_UNITS
                  if f"{h} systemctl start {u}.service" in order)
    assert max(order.index(f"{h} systemctl start sssd.service") for h in HOSTS) < started
    # the directory's people: pam_slurm_adopt on the compute nodes as with declared ones, the admins let past it
    gpu = first.sims["gpu01"]
    assert "+:(hpc-admins):ALL" in gpu.content("/etc/security/access-clusterforge.conf").decode()
    again = sim.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_the_password_is_never_shown(tmp_path):
    sim = cluster(tmp_path)
    plan = sim.plan()
    assert "/etc/sssd/sssd.conf: created; it holds a secret" in plan.output, dump(plan)
    run = sim.deploy("-vvv")
    assert run.returncode == 0, dump(run)
    sim.set_inventory("22.05", extra=directory(sim.directory), secrets={"ldap-bind-password": b"An0ther-Bind-pw"})
    changed = sim.plan()
    assert "/etc/sssd/sssd.conf: changed; it holds a secret" in changed.output, dump(changed)
    for output in (plan.output, run.output, changed.output):
        for secret in (PASSWORD, b"An0ther-Bind-pw"):
            assert secret.decode() not in output and secret[:8].decode() not in output
    refused = sim.deploy("--dry", "--diff")
    assert refused.returncode != 0 and "would print the contents of /etc/sssd/sssd.conf" in refused.output


def test_a_directory_change_restarts_sssd_only_and_a_killed_run_still_owes_it(tmp_path):
    sim = cluster(tmp_path)
    assert sim.deploy().returncode == 0
    sim.set_inventory("22.05", extra=directory(sim.directory, uris='("ldap://ldap2.example.org",)'),
                      secrets={"ldap-bind-password": PASSWORD})
    # killed on gpu01 right after the upload, before sssd restarts
    killed = sim.deploy(fail="gpu01:systemctl restart sssd.service")
    assert killed.returncode != 0
    assert b"ldap2" in killed.sims["gpu01"].content("/etc/sssd/sssd.conf")
    again = sim.deploy()
    assert again.returncode == 0, dump(again)
    assert again.ran("gpu01", "systemctl restart sssd.service") and again.ran("gpu01", "sss_cache -E")
    for name, host in again.sims.items():
        assert not any(u in e for e in host.events for u in ("slurmctld", "slurmd.", "slurmdbd", "munge.", "sackd")
                       if e.startswith(("systemctl restart", "systemctl start", "systemctl stop"))), name
    assert sim.deploy().operations() == []


def test_a_new_ca_restarts_sssd_everywhere(tmp_path):
    sim = cluster(tmp_path)
    assert sim.deploy().returncode == 0
    ca = sim.directory / "ldap-ca.pem"
    new = CA.replace(b"site-ca", b"site-ca-2")
    text = (sim.directory / "hosts.py").read_text().replace(hashlib.sha256(CA).hexdigest(),
                                                           hashlib.sha256(new).hexdigest())
    (sim.directory / "hosts.py").write_text(text)
    ca.write_bytes(new)
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    for name in HOSTS:
        assert run.ran(name, "systemctl restart sssd.service") and run.ran(name, "sss_cache -E"), name
        assert run.sims[name].content("/etc/sssd/clusterforge-ldap-ca.pem") == new


def test_nscd_is_stopped_where_sssd_runs(tmp_path):
    sim = cluster(tmp_path)
    for name in ("gpu01", "login1"):
        host = Sim.load(sim.directory / f"{name}.json")
        host.units["nscd.service"] = {"active": True, "enabled": True}
        host.save(sim.directory / f"{name}.json")
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    order = [f"{h} {c}" for h, c in run.order]
    for name in ("gpu01", "login1"):
        assert run.sims[name].units["nscd.service"] == {"active": False, "enabled": False}, name
        assert order.index(f"{name} systemctl disable --now nscd.service") < order.index(
            f"{name} systemctl start sssd.service")
    assert sim.deploy().operations() == []


def test_debian_13_keeps_the_mode_its_sssd_gives_the_file(tmp_path):
    sim = cluster(tmp_path, version="24.11")
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    assert first.sims["gpu01"].files["/etc/sssd/sssd.conf"]["mode"] == "640"
    assert sim.deploy().operations() == []


def test_a_host_without_sssd_in_its_archive_is_refused_before_anything_changes(tmp_path):
    sim = cluster(tmp_path, version="26.05")
    run = sim.deploy()
    assert run.returncode != 0
    # validation says it first: 26.05 is forky's, which has no SSSD
    assert "identity.directory" in run.output and "no SSSD" in run.output
    assert all(not s.events for s in run.sims.values())


def test_a_pinned_slurm_on_a_host_whose_os_has_no_sssd_is_refused_before_anything_changes(tmp_path):
    sim = SimCluster(tmp_path / "sim", version="26.05")
    sim.set_inventory("26.05", extra=directory(sim.directory) + ', stack=Stack(slurm="26.05.5-1")',
                      secrets={"ldap-bind-password": PASSWORD})
    run = sim.deploy()
    assert run.returncode != 0, dump(run)
    assert "these hosts' OS has no SSSD packages: ctl runs Debian testing (forky)" in run.output, dump(run)
    assert "Nothing was changed on any host" in run.output
    assert all(not s.events for s in run.sims.values())


def test_the_record_of_sssds_inputs_is_keyed_and_root_s_alone(tmp_path):
    # The record of what sssd last started with was a plain digest of sssd.conf, which holds the bind password:
    # readable by anyone (and printed by pyinfra -vv), it let anyone test guesses of the password offline. It is
    # keyed with the host's own key, uploaded as a secret, and the directory of the records is root's alone, on a host
    # deployed before too; a real file system, with the commands the hosts ran, shows nobody else reads the record.
    import os
    import subprocess

    from clusterforge.engine import ops

    applied = "/var/lib/clusterforge/applied"
    sim = cluster(tmp_path)
    ctl = Sim.load(sim.directory / "ctl.json")
    ctl.dirs[applied] = {"user": "root", "group": "root", "mode": "755"}  # as an earlier deploy left it
    ctl.save(sim.directory / "ctl.json")
    first = sim.deploy("-vvv")
    assert first.returncode == 0, dump(first)
    for name in HOSTS:
        host = first.sims[name]
        assert host.dirs[applied]["mode"] == "700", name
        record = host.content(f"{applied}/sssd.service").decode().strip()
        conf, ca = host.content("/etc/sssd/sssd.conf"), host.content("/etc/sssd/clusterforge-ldap-ca.pem")
        plain = ops.digest(conf, ca)
        assert record not in (plain, hashlib.sha256(conf).hexdigest()), name
        key = host.content(f"{applied}/sssd.key").decode().strip()
        assert len(key) == 64 and host.files[f"{applied}/sssd.key"]["mode"] == "600", name
        assert key not in first.output and f"{applied}/sssd.key" not in host.exposed, name
    assert first.ran("ctl", f"chmod 0700 {applied}")
    assert sim.deploy().operations() == []
    # A host an earlier release deployed: its record is the plain digest, and sssd runs those inputs. The record is
    # rewritten keyed, and sssd is not restarted for it.
    gpu = Sim.load(sim.directory / "gpu01.json")
    plain = ops.digest(gpu.content("/etc/sssd/sssd.conf"), gpu.content("/etc/sssd/clusterforge-ldap-ca.pem"))
    gpu.put(f"{applied}/sssd.service", f"{plain}\n".encode())
    gpu.files.pop(f"{applied}/sssd.key")
    gpu.save(sim.directory / "gpu01.json")
    upgraded = sim.deploy()
    assert upgraded.returncode == 0, dump(upgraded)
    assert not upgraded.ran("gpu01", "systemctl restart sssd.service")
    assert upgraded.sims["gpu01"].content(f"{applied}/sssd.key") is not None
    assert sim.deploy().operations() == []
    if os.geteuid() != 0:
        return
    real = tmp_path / "real"
    commands = [c for h, c in first.order if h == "gpu01" and applied in c and not c.startswith(("upload ", "cp "))]
    script = "set -e\n" + "\n".join(commands).replace(applied, str(real / "applied")) + "\n"
    real.mkdir()
    real.chmod(0o755)
    subprocess.run(["sh", "-c", script], check=True)
    record = real / "applied" / "sssd.service"
    assert record.read_text().strip() != hashlib.sha256(first.sims["gpu01"].content("/etc/sssd/sssd.conf")).hexdigest()
    refused = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", str(record)],
                             capture_output=True, text=True, check=False)
    assert refused.returncode != 0 and "Permission denied" in refused.stderr, refused
