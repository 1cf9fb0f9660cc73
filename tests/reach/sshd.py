"""A real OpenSSH server for the operations' connections to reach: Debian's sshd from the cached root
tests/render/test_access_service.py uses (tests/realslurm/build-debian-root.sh sshd-bookworm), run in a private mount
namespace over an overlay (the cached root is never changed) on 127.0.0.1, root logging in with a key made for the
test. Needs root and that root; skipped otherwise (failed where CLUSTERFORGE_REQUIRE_REALSLURM=1, as its peers)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ports
from needs import skip_or_fail

# A name only the server resolves (to itself): a host reached through it as a bastion (ProxyJump), never directly.
BEHIND = "behind-the-bastion"
CACHE = Path(os.environ.get("CLUSTERFORGE_CACHE", "/var/cache/clusterforge"))
ROOT = CACHE / "sshd-bookworm"

# The cached root as $M, over an overlay of the test's (upper, work) in this mount namespace, with /dev and /proc.
OVERLAY = """\
M={merged}
mount -t overlay overlay -o lowerdir={root},upperdir={upper},workdir={work} "$M"
mount --bind /dev "$M/dev"
mount -t proc proc "$M/proc"
"""

SCRIPT = "set -eu\n" + OVERLAY + """\
chroot "$M" sh -e -c '
  mkdir -p /root/.ssh /run/sshd; cp /tmp/key.pub /root/.ssh/authorized_keys; chmod 700 /root/.ssh
  echo "127.0.0.1 {behind}" >> /etc/hosts
  [ -f /etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -q -A'
exec chroot "$M" /usr/sbin/sshd -D -e -p {port} -o ListenAddress=127.0.0.1 -o PermitRootLogin=prohibit-password
"""


@dataclass(frozen=True)
class Sshd:
    port: int
    key: Path       # root's private key
    log: Path


def free_port() -> int:
    return ports.free_port()  # closed again on return: connections to it are refused until someone listens


def require() -> None:
    if not (ROOT / ".clusterforge-complete").exists() or os.geteuid() != 0 or shutil.which("unshare") is None:
        skip_or_fail(f"needs root and the cached Debian root with openssh-server at {ROOT} "
                     "(tests/realslurm/build-debian-root.sh sshd-bookworm)")


@contextlib.contextmanager
def running(tmp_path: Path) -> Iterator[Sshd]:
    """sshd listening on 127.0.0.1 until the block ends."""
    require()
    upper, work, merged = (tmp_path / name for name in ("upper", "work", "merged"))
    for path in (upper, work, merged, upper / "tmp"):
        path.mkdir()
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    (upper / "tmp" / "key.pub").write_text((tmp_path / "key.pub").read_text())
    port = free_port()
    log = tmp_path / "sshd.log"
    script = SCRIPT.format(merged=merged, root=ROOT, upper=upper, work=work, port=port, behind=BEHIND)
    with log.open("w") as out:
        server = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield Sshd(port, key, log)
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # sshd and the sessions it forked for the test's connections
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
