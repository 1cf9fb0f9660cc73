"""The cluster's people through the whole deploy on simulated hosts: groups then users with the inventory's ids on
every host, before slurmctld starts and before the accounting database hears of them; homes made once on the NFS
server (or on each login and compute host without a shared home) with their keys; a quiet second run; a locked or
dropped person expired, never deleted; a host where an id means someone else refused before anything changes."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess

from deploy.fakedeploy import SimCluster, dump
from deploy.simhost import Sim

from clusterforge.roles import identity as identity_role

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHkdpqRbBT6ybJEhpxSUcU1xw07q7O6WZCVeLUmsohHF alice@site"
ALICE = f'Person("alice", uid=20001, groups=("vision",), ssh_keys=("{KEY}",))'
BOB = 'Person("bob", uid=20002, gid=20102, shell="/bin/sh")'
HOSTS = ("ctl", "login1", "gpu01", "gpu04")


def identity(*people: str, home: str = "/shared", extra: str = "") -> str:
    return (f'identity=Identity(people=({", ".join(people)},), groups=(Group("vision", gid=30001),), '
            f'admin_group="vision", home_base="{home}"{extra})')


def test_people_on_every_host_before_slurmctld_homes_on_the_nfs_server_and_a_quiet_second_run(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, BOB))
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    for name in HOSTS:
        host = first.sims[name]
        assert host.users["alice"] == 20001 and host.groups["alice"] == 20001, name
        assert host.users["bob"] == 20002 and host.groups["bob"] == 20102 and host.groups["vision"] == 30001, name
        assert host.people["bob"] == {"gid": 20102, "home": "/shared/bob", "shell": "/bin/sh", "expire": ""}, name
        assert host.members["vision"] == ["alice"], name
    order = [f"{h} {c}" for h, c in first.order]
    made = max(order.index(f"{h} groupadd --gid 30001 vision") for h in HOSTS)
    assert made < order.index("ctl systemctl start slurmctld.service")
    # /shared is the export /srv/home mounted: the homes are made on the NFS server (ctl), in the export, once
    ctl = first.sims["ctl"]
    assert ctl.dirs["/srv/home/alice"] == {"user": "alice", "group": "alice", "mode": "700"}
    assert ctl.dirs["/srv/home/bob"] == {"user": "bob", "group": "bob", "mode": "700"}
    keys = "/srv/home/alice/.ssh/authorized_keys"
    assert ctl.content(keys) == f"{KEY}\n".encode()
    assert {k: ctl.files[keys][k] for k in ("user", "group", "mode")} == {"user": "alice", "group": "alice",
                                                                          "mode": "600"}
    assert "/srv/home/bob/.ssh" not in ctl.dirs  # no keys in the inventory: bob's own are his
    # SSH to a compute node only into a job: the stack, its access list and logind's drop-in, the package first
    pam = "/etc/pam.d/sshd"
    for name in ("gpu01", "gpu04"):
        gpu = first.sims[name]
        assert "libpam-slurm-adopt" in gpu.packages, name
        assert "pam_slurm_adopt.so action_adopt_failure=deny" in gpu.content(pam).decode(), name
        assert "+:(vision):ALL" in gpu.content("/etc/security/access-clusterforge.conf").decode(), name
        assert "RemoveIPC=no" in gpu.content("/etc/systemd/logind.conf.d/clusterforge.conf").decode(), name
        assert gpu.units["systemd-logind.service"]["active"], name
        assert order.index(f"{name} upload /etc/security/access-clusterforge.conf") < order.index(
            f"{name} upload {pam}"), name
    assert pam not in first.sims["login1"].files  # a login host's stack stays Debian's
    for name in ("login1", "ctl"):
        assert "libpam-slurm-adopt" not in first.sims[name].packages, name
    # the controller is a service host: its stack admits root and the admin group only (test_service_access.py)
    assert "accessfile=/etc/security/access-clusterforge-service.conf" in first.sims["ctl"].content(pam).decode()
    for name in ("login1", "gpu01"):
        assert not any(p.startswith(("/shared/", "/srv/home/")) for p in (*first.sims[name].dirs,
                                                                          *first.sims[name].files)), name
    again = sim.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_the_deploys_own_ssh_user_keeps_reaching_the_compute_nodes(tmp_path):
    # Logged in as admin (sudo), not root: the access list lets admin past pam_slurm_adopt, or the next run, check
    # and roll would be refused on every compute node (found on the test cluster, which logs in as vagrant).
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE))
    hosts = sim.directory / "hosts.py"
    text = hosts.read_text()
    assert "host_groups(_cluster, fake_delay=0" in text
    hosts.write_text(text.replace("host_groups(_cluster, fake_delay=0", 'host_groups(_cluster, ssh_user="admin", '
                                                                       "fake_delay=0"))
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    for name in ("gpu01", "gpu04"):
        listed = run.sims[name].content("/etc/security/access-clusterforge.conf").decode().splitlines()[1:]
        assert listed == ["+:root:ALL", "+:admin:ALL", "+:(vision):ALL", "-:ALL:ALL"], name
    again = sim.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_adopt_off_leaves_sshd_as_debian_has_it(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, extra=", adopt=False"))
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    gpu = first.sims["gpu01"]
    assert gpu.users["alice"] == 20001
    assert "/etc/pam.d/sshd" not in gpu.files and "libpam-slurm-adopt" not in gpu.packages


def test_homes_on_each_login_and_compute_host_without_a_shared_home(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, home="/home"))
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    for name in ("login1", "gpu01", "gpu03"):
        host = first.sims[name]
        assert host.dirs["/home/alice"]["user"] == "alice" and host.dirs["/home/alice"]["mode"] == "700", name
        assert host.content("/home/alice/.ssh/authorized_keys") == f"{KEY}\n".encode(), name
    assert "/home/alice" not in first.sims["ctl"].dirs  # nobody logs in to the controller
    assert "/srv/home/alice" not in first.sims["ctl"].dirs
    assert sim.deploy().operations() == []


def test_hosts_sharing_one_home_directory_make_it_at_once_without_colliding(tmp_path):
    # Where the login and compute hosts share /home (a site's, or the test cluster's) without an NFS mount of the
    # inventory, each makes the homes in the same run. The commands each host ran here are run again, every host's at
    # once, against one real directory: written in place (install, upload, chown), one host's fail on another's
    # ("File exists", seen on the test cluster), 1 run in 6 there, 1 in 5 of these processes here.
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, home="/home"))
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    hosts = ("login1", "gpu01", "gpu02", "gpu03", "gpu04")
    shared = tmp_path / "shared"
    copy = tmp_path / "alice.keys"  # root's copy of her keys, from which her own process writes the file
    copy.write_text(f"{KEY}\n")
    scripts = {}
    for host in hosts:
        lines = [c for h, c in first.order if h == host and " -> " not in c
                 and (c.split()[-1].startswith("/home/alice") or c.startswith("setpriv "))]
        assert not any(c.split()[-1] == "/home/alice/.ssh/authorized_keys" for c in lines if "mv -f" not in c), \
            (host, lines)  # never written in place: only renamed over
        assert all(c.startswith("setpriv --reuid=20001 --regid=20001 ") for c in lines
                   if "/home/alice/.ssh" in c), (host, lines)  # inside the home, only by alice's own process
        # Replayed by whoever runs the test in place of alice (as root: setpriv to root; otherwise as that user)
        prefix = "setpriv --reuid=20001 --regid=20001 --clear-groups -- "
        replay = [(c.replace(prefix, prefix.replace("20001", "0")) if os.geteuid() == 0 else c.replace(prefix, ""))
                  .replace(f"{identity_role.KEYS_DIR}/alice.keys", str(copy)) for c in lines]
        replay = [re.sub(r"^chown \S+ ", "chown 0:0 ", c) if os.geteuid() == 0 else c for c in replay
                  if os.geteuid() == 0 or not c.startswith("chown ")]
        scripts[host] = "set -e\n" + "\n".join(replay).replace("/home/alice", f"{shared}/alice") + "\n"
    for _ in range(20):
        shutil.rmtree(shared, ignore_errors=True)
        shared.mkdir()
        runs = [subprocess.Popen(["sh", "-c", script], stderr=subprocess.PIPE, text=True)
                for script in scripts.values()]
        failed = [err for run in runs if (err := run.communicate()[1]) or run.returncode]
        assert failed == [], failed
        keys = shared / "alice" / ".ssh" / "authorized_keys"
        assert keys.read_text() == f"{KEY}\n" and oct(keys.stat().st_mode & 0o777) == "0o600"
        assert [p.name for p in keys.parent.iterdir()] == ["authorized_keys"]


def test_a_home_is_made_once_and_then_left_as_it_is(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE))
    assert sim.deploy().returncode == 0
    ctl = sim.sims()["ctl"]
    ctl.dirs["/srv/home/alice"]["mode"] = "750"  # the person opened it to their group
    ctl.save(sim.directory / "ctl.json")
    again = sim.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)
    assert again.sims["ctl"].dirs["/srv/home/alice"]["mode"] == "750"


def test_locked_then_dropped_people_are_expired_never_deleted_and_come_back(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, BOB))
    assert sim.deploy().returncode == 0
    sim.set_inventory(extra=identity(ALICE, BOB.replace(")", ", locked=True)")))
    locked = sim.deploy()
    assert locked.returncode == 0, dump(locked)
    for name in HOSTS:
        assert locked.sims[name].people["bob"]["expire"] == "1", name
        assert locked.sims[name].people["alice"]["expire"] == "", name
    assert sim.deploy().operations() == []
    sim.set_inventory(extra=identity(ALICE, BOB))
    assert sim.deploy().returncode == 0
    assert all(s.people["bob"]["expire"] == "" for s in sim.sims().values() if "bob" in s.people)
    # dropped from the inventory: still there, with its home, expired; alice's removal from vision is the same run's
    sim.set_inventory(extra=identity(ALICE.replace('groups=("vision",), ', "")))
    dropped = sim.deploy()
    assert dropped.returncode == 0, dump(dropped)
    assert "bob locked (no longer in the inventory)" in dropped.output
    for name in HOSTS:
        host = dropped.sims[name]
        assert host.users["bob"] == 20002 and host.people["bob"]["expire"] == "1", name
        assert host.members["vision"] == [], name
    assert "/srv/home/bob" in dropped.sims["ctl"].dirs
    assert sim.deploy().operations() == []


def test_a_host_where_the_uid_is_someone_elses_is_refused_before_anything_changes(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE))
    assert sim.deploy().returncode == 0
    gpu = sim.sims()["gpu02"]
    gpu.users["carol"] = 20003
    gpu.save(sim.directory / "gpu02.json")
    sim.set_inventory(extra=identity(ALICE, 'Person("dave", uid=20003)'))
    refused = sim.deploy()
    assert refused.returncode != 0
    assert "gpu02: uid 20003 of dave belongs to user carol" in refused.output
    assert all("dave" not in s.users for s in refused.sims.values())
    plan = sim.plan()
    assert "uid 20003 of dave belongs to user carol" in plan.output


DEBIAN_SSHD = ("# PAM configuration for the Secure Shell service\n\n@include common-auth\n"
               "account    required     pam_nologin.so\n@include common-account\n"
               "session    optional     pam_systemd.so\n@include common-session\n")
KEPT = "/var/lib/clusterforge/access/sshd.pam.debian"


def debian_sshd(sim: SimCluster, *hosts: str) -> None:
    """openssh-server's /etc/pam.d/sshd on these hosts, as Debian installs it (before any deploy)."""
    for name in hosts:
        path = sim.directory / f"{name}.json"
        host = Sim.load(path)
        host.files["/etc/pam.d/sshd"] = {"content": base64.b64encode(DEBIAN_SSHD.encode()).decode(), "user": "root",
                                         "group": "root", "mode": "644"}
        host.save(path)


def test_adopt_turned_off_gives_debians_sshd_stack_back_and_removes_what_adopt_wrote(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE))
    debian_sshd(sim, "gpu01", "gpu04")
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    for name in ("gpu01", "gpu04"):
        gpu = first.sims[name]
        assert gpu.content(KEPT) == DEBIAN_SSHD.encode(), name
        assert "pam_slurm_adopt" in gpu.content("/etc/pam.d/sshd").decode(), name
    assert sim.deploy().operations() == []  # kept once: clusterforge's own stack is never kept as Debian's
    sim.set_inventory(extra=identity(ALICE, extra=", adopt=False"))
    off = sim.deploy()
    assert off.returncode == 0, dump(off)
    for name in ("gpu01", "gpu04"):
        gpu = off.sims[name]
        assert gpu.content("/etc/pam.d/sshd") == DEBIAN_SSHD.encode(), name
        assert not {KEPT, "/etc/security/access-clusterforge.conf",
                    "/etc/systemd/logind.conf.d/clusterforge.conf"} & set(gpu.files), name
    again = sim.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)
    # On again: Debian's is kept afresh, and clusterforge's written.
    sim.set_inventory(extra=identity(ALICE))
    on = sim.deploy()
    assert on.returncode == 0 and on.sims["gpu01"].content(KEPT) == DEBIAN_SSHD.encode(), dump(on)


def test_a_stack_written_before_debians_was_kept_is_left_with_the_way_to_get_debians_back(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE))
    first = sim.deploy()  # no Debian stack seen (as on hosts clusterforge's first adopt wrote over)
    assert first.returncode == 0 and KEPT not in first.sims["gpu01"].files, dump(first)
    sim.set_inventory(extra=identity(ALICE, extra=", adopt=False"))
    off = sim.deploy()
    assert off.returncode == 0, dump(off)
    assert "pam_slurm_adopt" in off.sims["gpu01"].content("/etc/pam.d/sshd").decode()
    assert "apt-get install --reinstall -o Dpkg::Options::=--force-confmiss openssh-server" in off.output
    assert "/etc/security/access-clusterforge.conf" not in off.sims["gpu01"].files


def _replace_with_link(sim: SimCluster, host: str, path: str, target: str, remove: tuple[str, ...] = ()) -> None:
    """A person's move between two deploys: ``path`` (and what ``remove`` names) made a link to ``target``."""
    found = sim.sims()[host]
    for gone in (path, *remove):
        found.dirs.pop(gone, None)
        found.files.pop(gone, None)
    found.links[path] = {"target": target, "user": "alice"}
    found.save(sim.directory / f"{host}.json")


def test_a_persons_ssh_made_a_link_to_etc_is_named_and_root_follows_nothing(tmp_path):
    # Seen on the test cluster: alice made ~/.ssh a link to /etc, and the next deploy's root chown gave her /etc.
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, home="/home"))
    assert sim.deploy().returncode == 0
    _replace_with_link(sim, "login1", "/home/alice/.ssh", "/etc", remove=("/home/alice/.ssh/authorized_keys",))
    etc = dict(sim.sims()["login1"].dirs["/etc"])
    assert etc == {"user": "root", "group": "root", "mode": "755"}
    plan = sim.plan()
    assert "login1: /home/alice/.ssh is a symbolic link, not a directory of alice's own: left untouched" in \
        plan.output, dump(plan)
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    assert run.sims["login1"].dirs["/etc"] == etc
    assert "/home/alice/.ssh is a symbolic link, not a directory of alice's own: left untouched, and the " \
           "inventory's keys for alice are not written" in run.output, dump(run)
    assert not any("/home/alice" in e for e in run.sims["login1"].events[-40:] if "setpriv" in e or "chown" in e)
    assert run.sims["gpu01"].content("/home/alice/.ssh/authorized_keys") == f"{KEY}\n".encode()  # her own, there


def test_keys_and_their_staged_name_made_links_to_roots_files_reach_only_alices_own(tmp_path):
    # Root wrote the keys beside the file, then chowned and renamed it: a link at either name took root's write (and
    # its chown) into /etc/shadow. Her own process writes them now, and a rename replaces a link.
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, home="/home"))
    assert sim.deploy().returncode == 0
    login = sim.sims()["login1"]
    login.files["/etc/shadow"] = {"content": base64.b64encode(b"root:$y$...:19000::::::\n").decode(), "user": "root",
                                  "group": "shadow", "mode": "640"}
    login.save(sim.directory / "login1.json")
    keys = "/home/alice/.ssh/authorized_keys"
    _replace_with_link(sim, "login1", keys, "/etc/shadow")
    _replace_with_link(sim, "login1", f"{keys}.login1.clusterforge-new", "/etc/shadow")
    shadow = dict(sim.sims()["login1"].files["/etc/shadow"])
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    login = run.sims["login1"]
    assert login.files["/etc/shadow"] == shadow
    assert keys not in login.links and login.content(keys) == f"{KEY}\n".encode()
    assert {k: login.files[keys][k] for k in ("user", "group", "mode")} == {"user": "alice", "group": "alice",
                                                                           "mode": "600"}
    again = sim.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_a_new_host_on_a_shared_home_writes_the_keys_in_its_first_deploy(tmp_path):
    # A host added to a cluster whose /home is shared sees alice's home before its deploy makes alice: its stat has no
    # name for her uid ("UNKNOWN"), which is no one's else. Read by uid, her home is hers from the first deploy.
    sim = SimCluster(tmp_path / "sim", extra=identity(ALICE, home="/home"))
    gpu = Sim.load(sim.directory / "gpu01.json")
    mine = {"user": "20001", "group": "20001", "mode": "700"}
    gpu.dirs.update({"/home": {"user": "root", "group": "root", "mode": "755"}, "/home/alice": dict(mine),
                     "/home/alice/.ssh": dict(mine)})
    gpu.files["/home/alice/.ssh/authorized_keys"] = {**mine, "mode": "600",
                                                     "content": base64.b64encode(f"{KEY}\n".encode()).decode()}
    gpu.save(sim.directory / "gpu01.json")
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    assert "not a directory of alice's own" not in first.output, dump(first)
    assert first.sims["gpu01"].content("/var/lib/clusterforge/people/alice.keys") == f"{KEY}\n".encode()
    again = sim.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)
