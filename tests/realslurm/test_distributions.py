"""The Debian rows of the OS table (clusterforge/distributions.py) are what each Debian release really ships: its
os-release as the deploy's host-state read reports it, and the versions of slurmctld, munge and MariaDB installed
from its own archive (Debian 12 on this host, Debian 13 and forky in the real-Slurm tier's roots), and MariaDB's
default for innodb_snapshot_isolation, which the rendered MariaDB settings turn off where it is on."""

from __future__ import annotations

from pathlib import Path

import pytest
from realslurm import harness

from clusterforge.distributions import of_os, snapshot_isolation_on
from clusterforge.versions import v


def os_release(root: Path) -> tuple[str, str]:
    fields = dict(line.split("=", 1) for line in (root / "etc/os-release").read_text().splitlines() if "=" in line)
    return fields.get("ID", "").strip('"'), fields.get("VERSION_ID", "").strip('"')


@pytest.mark.realslurm
@pytest.mark.parametrize("version", sorted(harness.VERSIONS))
def test_the_table_says_what_each_debian_ships(version):
    runtime = harness.require(version, accounting=True)
    found = of_os(os_release(runtime.root or Path("/")))
    assert found is not None and found.slurm == v(version)
    query = runtime.run(["dpkg-query", "-W", "-f=${Package} ${Version}\\n", "slurmctld", "munge", "mariadb-server"],
                        binds=()).stdout
    installed = dict(line.split(" ", 1) for line in query.splitlines())
    assert installed["slurmctld"] == found.slurm_package
    assert installed["munge"] == found.munge
    mariadb = installed["mariadb-server"].split(":", 1)[-1]
    assert tuple(int(n) for n in mariadb.split("-")[0].split("+")[0].split(".")) == found.mariadb
    # What the rendered MariaDB settings turn off where it is on: MariaDB's own default, as mariadbd reports it.
    defaults = runtime.run(["mariadbd", "--no-defaults", "--verbose", "--help"], binds=(), check=False).stdout
    default = next(line.split()[-1] for line in defaults.splitlines() if line.startswith("innodb-snapshot-isolation "))
    assert snapshot_isolation_on(v(version)) == (default == "TRUE"), default
