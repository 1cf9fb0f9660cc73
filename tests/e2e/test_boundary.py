"""End to end: the deploy, attacked by a real unprivileged person on the test cluster (alice, a declared person of
inventories/vagrant.py, logged in over SSH with her own key). The test cluster's kernel has fs.protected_symlinks and
fs.protected_regular at 0, the worst case: root follows any link in /tmp and writes into a file of hers there.

Both attacks go into one deploy (the waits are shared):
- her ``~/.ssh`` made a link to ``/etc`` (the homes are one shared /home here, as NFS gives): before, the deploy's root
  ``chown alice:alice ~/.ssh`` gave her /etc on login1, gpu01 and gpu02;
  `check` names it too;
- the name pyinfra staged an upload at through sudo (``/tmp/pyinfra-<sha1 of the destination>``), made first by her
  (0666) and rewritten in a loop while login1's slurm.conf is written again: before, her line reached it (3 deploys in
  3). The deploy logs in as vagrant and writes through sudo, as a site's would.
"""

from __future__ import annotations

import hashlib
import shlex

import pytest
from e2e.test_check import check
from e2e.test_identity import HOMES, UIDS, logins, ssh  # noqa: F401  (logins: the module's fixture)
from e2e.testbed import MACHINES

pytestmark = pytest.mark.e2e

LOGIN = MACHINES["login1"]
SLURM_CONF = "/etc/slurm/slurm.conf"
STAGED = f"/tmp/pyinfra-{hashlib.sha1(SLURM_CONF.encode()).hexdigest()}"  # pyinfra's name for its sudo upload
HER_LINE = "SlurmctldHost=alices-own"
# Her loop: the staging name made first, open to all, and her line written into it again and again (bounded).
LOOP = (f"nohup setsid timeout 600 sh -c 'while :; do printf \"%s\\n\" {shlex.quote(HER_LINE)} > {STAGED}; "
        f"chmod 666 {STAGED}; done' >/dev/null 2>&1 < /dev/null &")
HOMES_ON = ("login1", "gpu01", "gpu02")


def test_her_link_and_her_staging_file_reach_nothing_of_roots(testbed, logins):  # noqa: F811
    etc = {name: testbed.run(MACHINES[name], "stat -c '%U:%G %a' /etc").strip() for name in HOMES_ON}
    assert set(etc.values()) == {"root:root 755"}, etc
    started = ssh(logins, "alice", LOGIN, f"{LOOP} sleep 1; stat -c '%U %a' {STAGED}")
    assert started.returncode == 0 and started.stdout.strip() == "alice 666", started.stderr
    moved = ssh(logins, "alice", LOGIN, "mv ~/.ssh ~/.ssh.kept && ln -s /etc ~/.ssh && stat -c %F ~/.ssh")
    assert moved.returncode == 0 and moved.stdout.strip() == "symbolic link", moved.stderr
    try:
        testbed.run(LOGIN, f"echo '# changed by hand' >> {SLURM_CONF}")  # so the deploy writes it again
        run = testbed.deploy()
        assert run.returncode == 0, run.output[-4000:]
        assert "/home/alice/.ssh is a symbolic link, not a directory of alice's own: left untouched" in run.output, \
            run.output[-4000:]
        after = {name: testbed.run(MACHINES[name], "stat -c '%U:%G %a' /etc").strip() for name in HOMES_ON}
        assert after == etc
        written = testbed.run(LOGIN, f"cat {SLURM_CONF}")
        assert HER_LINE not in written and "# changed by hand" not in written
        assert written == testbed.run(MACHINES["ctl"], f"cat {SLURM_CONF}")
        checked = check(testbed, "--limit", "login1")
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert "/home/alice/.ssh is a symbolic link, not a directory of alice's own" in checked.stdout, checked.stdout
        # her loop was at work all along, at the name the upload no longer uses
        assert testbed.run(LOGIN, f"stat -c '%U' {STAGED} && pgrep -u alice -f pyinfra- >/dev/null && echo on"
                           ).split() == ["alice", "on"]
    finally:
        testbed.run(LOGIN, "pkill -u alice -f 'pyinfra-' || true; rm -f " + STAGED)
        link, kept = HOMES / "alice" / ".ssh", HOMES / "alice" / ".ssh.kept"
        if link.is_symlink():
            link.unlink()
        if kept.is_dir():
            kept.rename(link)
    assert ssh(logins, "alice", LOGIN, "id -un").stdout.strip() == "alice"
    assert (HOMES / "alice" / ".ssh").stat().st_uid == UIDS["alice"]
