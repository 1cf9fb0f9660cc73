"""End to end: a Slurm patch release through `clusterforge roll --apply --services`, jobs running: every host moves
to the version the inventory pins, each daemon restarts in Slurm's order (slurmdbd, slurmctld, then each node in
its batch), one node out at a time, and every job completes.

What is not real here, and why: this machine can download no other Slurm than Debian's own, so the patch release is
Debian's packages under a new version (testbed/site-slurm.sh): the files the daemons run are the same bytes, but apt
moves every package, dpkg replaces every file, and each daemon must be restarted to run them.
"""

from __future__ import annotations

import pytest
from e2e.test_health import sinfo
from e2e.test_roll import CTL, NODES, Watched, roll, states, submit_running
from e2e.testbed import MACHINES

pytestmark = pytest.mark.e2e

SITE = "/etc/apt/sources.list.d/site-slurm.list"
DAEMONS = {"ctl": ("slurmdbd", "slurmctld"), "gpu01": ("slurmd",), "gpu02": ("slurmd",)}


def started(bed, machine: str, unit: str) -> int:
    """When the unit last started, in microseconds of the machine's clock (the machines share the host's)."""
    out = bed.run(MACHINES[machine], f"systemctl show --property=ActiveEnterTimestampMonotonic --value {unit}")
    return int(out.strip())


def replaced(bed, machine: str) -> list[str]:
    """The daemons still running an executable their package has since replaced."""
    out = bed.run(MACHINES[machine], "for p in $(pgrep -x 'slurm(ctld|d|dbd)'); do "
                                     "readlink /proc/$p/exe; done | grep -F '(deleted)' || true")
    return out.split()


@pytest.fixture
def site_release(testbed, monkeypatch):
    """Debian's Slurm of the cluster, published again as a site's patch release, and the machines' apt told where
    it is; afterwards the inventory pins nothing again (the hosts keep the release, held) and the source goes."""
    bed = testbed
    have = bed.run(CTL, "dpkg-query -W -f='${Version}' slurm-client").strip()
    made = bed.script("site-slurm.sh", have)
    assert made.returncode == 0, made.stderr[-3000:]
    new = made.stdout.split()[-1]
    for address in MACHINES.values():
        bed.run(address, f"echo 'deb [trusted=yes] http://10.77.0.1:3142/clusterforge-site/ /' > {SITE}")
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_SLURM", new)
    yield bed, have, new
    for address in MACHINES.values():
        bed.run(address, f"rm -f {SITE}")


def test_a_patch_release_rolls_through_in_slurms_order_and_every_job_completes(site_release):
    bed, have, new = site_release
    before = {(m, u): started(bed, m, u) for m, units in DAEMONS.items() for u in units}
    jobs = [submit_running(bed, f"--nodelist={node}", 20) for node in NODES]
    process = roll(bed, "--apply", "--services", "--batch", "1", "--wait", "300")
    watched = Watched(process)
    output = watched.until(bed)
    assert process.returncode == 0, output
    assert watched.most <= 1, watched.at_most
    for name, address in MACHINES.items():
        versions = bed.run(address, "dpkg-query -W -f='${Package} ${Version}\\n' 'slurm*' 'libslurm*' 2>/dev/null "
                                    "| awk 'NF == 2'").split("\n")
        moved = dict(line.split() for line in versions if line)
        assert moved and set(moved.values()) == {new}, (name, moved)
        assert "slurm-client" in bed.run(address, "apt-mark showhold"), f"{name}: held again at {new}"
        assert replaced(bed, name) == [], f"{name}: a daemon still runs the executable of {have}"
    after = {key: started(bed, *key) for key in before}
    assert all(after[key] > before[key] for key in before), (before, after)
    # Slurm's order: slurmdbd, then slurmctld, then each node in its batch.
    assert after[("ctl", "slurmdbd")] < after[("ctl", "slurmctld")] < after[("gpu01", "slurmd")] \
        < after[("gpu02", "slurmd")], after
    bed.run(CTL, "until [ -z \"$(squeue --noheader)\" ]; do sleep 1; done", 120)
    assert states(bed, jobs) == {"COMPLETED"}, output
    assert not any(reason for _, reason in sinfo(bed).values())
    again = bed.deploy()
    assert again.returncode == 0 and again.changed == 0, again.output[-3000:]
