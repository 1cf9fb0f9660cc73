"""The test cluster refuses root logins over SSH: the deploy, plan, check, roll and these tests log in as vagrant and
run their commands through sudo (inventories/vagrant.py: ssh_user="vagrant", sudo=True). A secret still never
lies anywhere the SSH user could read it on its way to a host."""

from __future__ import annotations

import ctypes
import hashlib
import os
import select
import struct
import subprocess
import threading
from pathlib import Path

import pytest
from e2e.test_cluster import CTL, addresses, auth_of, vault_secrets
from e2e.test_directory import PEOPLE as DIRECTORY_PEOPLE
from e2e.testbed import INVENTORY, MACHINES, REPO, SSH_USER, STATE

from clusterforge.loader import load_cluster

pytestmark = pytest.mark.e2e

# Where a copy on the way would lie: pyinfra's staging directory for a sudo upload, and the SSH user's own.
STAGING_DIRS = ("tmp", "var/tmp", "var/lib/vagrant")
# The cluster's people, declared or, while test_directory runs before this module, from its directory.
PEOPLE = {person.name for person in load_cluster(INVENTORY).identity.people} | set(DIRECTORY_PEOPLE)
_libc = ctypes.CDLL("libc.so.6", use_errno=True)
_IN_CLOSE_WRITE, _IN_MOVED_TO = 0x8, 0x80


def ssh(address: str, user: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ssh", "-i", str(STATE / "id_ed25519"), "-o", "BatchMode=yes", "-o",
                           "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                           "-o", "ConnectTimeout=10", f"{user}@{address}", command],
                          check=False, text=True, capture_output=True, timeout=60)


def test_root_may_not_log_in_anywhere_and_vagrant_has_sudo(testbed):
    for name, address in MACHINES.items():
        refused = ssh(address, "root", "true")
        assert refused.returncode == 255 and "Permission denied" in refused.stderr, (name, refused.stderr)
        assert ssh(address, SSH_USER, "id -un; sudo -n id -un").stdout.split() == [SSH_USER, "root"], name


def test_the_deploy_logged_in_as_vagrant_never_as_root(testbed):
    for name, address in MACHINES.items():
        # sshd-session: where OpenSSH 9.8 and later (Debian 13) log a session's authentication.
        logins = testbed.run(address, "journalctl --no-pager -o cat SYSLOG_IDENTIFIER=sshd SYSLOG_IDENTIFIER="
                                      "sshd-session | grep -o 'Accepted publickey for [a-z]*' | sort -u")
        # Besides vagrant, only the inventory's people, logging in as themselves (test_identity.py).
        users = {line.rsplit(" ", 1)[1] for line in logins.split("\n")[:-1]}
        assert SSH_USER in users and users - {SSH_USER} <= PEOPLE, (name, logins)


class Watch:
    """Every file closed after writing (or renamed) in the staging directories of every machine while it runs, read
    at once from this machine: what each held. inotify through /proc/PID/root reaches a directory of the machine's
    own mounts (a tmpfs /tmp too), which the container's rootfs on this machine does not show."""

    def __init__(self) -> None:
        self.seen: dict[str, set[str]] = {}
        self._fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self._fd >= 0, f"inotify_init1: errno {ctypes.get_errno()}"
        self._dirs: dict[int, str] = {}
        for name in MACHINES:
            pid = subprocess.run(["lxc-info", "-n", f"cf-{name}", "-pH"], check=True, text=True,
                                 capture_output=True).stdout.strip()
            for directory in STAGING_DIRS:
                path = f"/proc/{pid}/root/{directory}"
                wd = _libc.inotify_add_watch(self._fd, path.encode(), _IN_CLOSE_WRITE | _IN_MOVED_TO)
                assert wd >= 0, f"inotify_add_watch {path}: errno {ctypes.get_errno()}"
                self._dirs[wd] = path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.2)
            if not ready:
                continue
            data = os.read(self._fd, 1 << 16)
            offset = 0
            while offset < len(data):
                wd, _, _, size = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16:offset + 16 + size].rstrip(b"\0").decode(errors="replace")
                offset += 16 + size
                path = f"{self._dirs[wd]}/{name}"
                try:
                    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                except OSError:  # gone already, or a directory
                    digest = "unread"
                self.seen.setdefault(path, set()).add(digest)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        os.close(self._fd)


def test_a_rotated_key_reaches_every_host_with_no_copy_on_the_way(testbed):
    """The key rotated and deployed through sudo: while the deploy runs, no file the deploy writes in /tmp, /var/tmp
    or vagrant's home holds it (pyinfra's own sudo upload would stage it in /tmp, owned by vagrant), and it arrives
    whole, private to its daemon."""
    kind, path, owner, mode = (("slurm-key", "/etc/slurm/slurm.key", "slurm", "600") if auth_of(testbed) == "slurm"
                               else ("munge-key", "/etc/munge/munge.key", "munge", "400"))
    rotate = subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "secrets", "rotate", str(testbed.inventory),
                             kind], check=False, cwd=REPO, env=testbed.env(), text=True, capture_output=True,
                            timeout=120)
    assert rotate.returncode == 0, rotate.stdout + rotate.stderr
    secrets = vault_secrets(testbed)
    wanted = hashlib.sha256((secrets.slurm_key() if kind == "slurm-key" else secrets.munge_key()).reveal()).hexdigest()
    with Watch() as watch:
        for address in MACHINES.values():  # a write through the same sudo, which the watch must see: it looks
            testbed.run(address, "echo probe > /tmp/cf-watch-probe && rm /tmp/cf-watch-probe")
        deployed = testbed.deploy()
    assert deployed.returncode == 0, deployed.output[-4000:]
    copies = sorted(p for p, digests in watch.seen.items() if wanted in digests)
    assert not copies, f"the new key lay in {copies}"
    probed = [p for p in watch.seen if p.endswith("/root/tmp/cf-watch-probe")]
    assert len(probed) == len(MACHINES), watch.seen
    for address in addresses(testbed):
        held = testbed.run(address, f"stat -c '%U %a' {path}; sha256sum {path}").split()
        assert held[:3] == [owner, mode, wanted], (address, held)
    assert sorted(testbed.run(CTL, "srun --nodes=2 hostname").split()) == ["gpu01", "gpu02"]
