"""What clusterforge renders differently for Slurm 26.05 as Debian ships it (26.05.5-1), and for the MariaDB beside it:
no PMIx (Debian's packages have no mpi/pmix plugin), job cgroups named job_<id> again (CgroupJobIdPaths, from
26.05.2), snapshot isolation off where MariaDB turns it on, and slurmrestd's reload (SIGHUP ends it) cleared. The
real daemons take these files in tests/realslurm (the forky root)."""

from __future__ import annotations

import pytest
from clusters import only_problem, small_cluster

from clusterforge.key_tables import cgroup_conf_keys
from clusterforge.model import Rest, Stack, resolve
from clusterforge.render import render_all
from clusterforge.render.slurmrestd import dropin
from clusterforge.roles.packages import pmix_library
from clusterforge.versions import SUPPORTED, v


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize(("release", "mpi", "library"), [
    ("22.05", "pmix", ["libpmix2"]), ("24.11", "pmix", ["libpmix2t64"]), ("25.11", "pmix", ["libpmix2t64"]),
    ("26.05", "none", []),
])
def test_pmix_only_where_the_release_has_its_plugin_and_its_library_only_then(release, mpi, library):
    valid = resolve(small_cluster(slurm_version=release))
    assert f"MpiDefault={mpi}" in lines(render_all(valid)["slurm.conf"])
    assert pmix_library(valid) == library


@pytest.mark.parametrize("release", [str(r) for r in SUPPORTED])
def test_job_cgroups_are_named_by_job_id_on_26_05_and_the_key_is_never_written_where_slurm_lacks_it(release):
    cgroup = lines(render_all(resolve(small_cluster(slurm_version=release)))["cgroup.conf"])
    written = "CgroupJobIdPaths=yes" in cgroup
    assert written == (v(release) >= v("26.05"))
    assert written == (cgroup_conf_keys(v(release)).lookup("CgroupJobIdPaths") is not None)


@pytest.mark.parametrize("pinned", ["26.05.0-1", "26.05.1-2", "1:26.05.1-1"])
def test_a_26_05_older_than_26_05_2_is_refused_where_it_is_pinned(pinned):
    problem = only_problem(small_cluster(slurm_version="26.05", stack=Stack(slurm=pinned)))
    assert problem.startswith("stack.slurm")
    assert f"{pinned!r} is older than Slurm 26.05.2" in problem and "CgroupJobIdPaths=yes" in problem


@pytest.mark.parametrize("pinned", ["26.05.2-1", "26.05.5-1", "26.05.10-1"])
def test_26_05_2_and_later_pass(pinned):
    valid = resolve(small_cluster(slurm_version="26.05", stack=Stack(slurm=pinned)))
    assert "CgroupJobIdPaths=yes" in lines(render_all(valid)["cgroup.conf"])


@pytest.mark.parametrize(("release", "off"), [
    ("21.08", False), ("22.05", False), ("23.11", False),  # Ubuntu's 10.6 and 10.11, Debian 12's 10.11
    ("24.11", True), ("26.05", True),                      # MariaDB 11.8 on Debian 13 and forky
    ("25.11", False),                                      # no OS ships it: a site's build, its MariaDB unknown
])
def test_snapshot_isolation_is_off_where_the_release_comes_with_mariadb_11_6_2_or_later(release, off):
    cnf = lines(render_all(resolve(small_cluster(slurm_version=release)))["mariadb-slurmdbd.cnf"])
    assert ("innodb_snapshot_isolation=OFF" in cnf) == off


@pytest.mark.parametrize("release", ["22.05", "24.11", "26.05"])
def test_slurmrestds_reload_is_cleared_after_its_start_command(release):
    text = dropin(resolve(small_cluster(slurm_version=release, rest=Rest())))
    assert text is not None
    service = lines(text)
    assert "ExecReload=" in service and not any(line.startswith("ExecReload=/") for line in service)
    assert service.index("ExecReload=") > service.index("[Service]")
