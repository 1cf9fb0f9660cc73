"""The service hosts of a roll with --services, in Slurm's order (roll/services.py), and the dump of the accounting
database run by sh here against a stand-in mariadb-dump (a MariaDB server does not run in this tier; the e2e roll
dumps the test cluster's real one)."""

from __future__ import annotations

import gzip
import os
import stat
import subprocess
from pathlib import Path

from clusters import small_cluster

from clusterforge.model import Host, resolve
from clusterforge.roll.services import ServiceStep, dump_command, service_order


def test_the_database_host_then_the_controllers_before_the_batches_and_the_login_hosts_after():
    valid = resolve(small_cluster(database=Host("db", address="10.9.0.2", memory=8192),
                                  backup_controller=Host("ctl2", address="10.9.0.3"),
                                  login=(Host("login1", address="10.9.0.4"), Host("login2", address="10.9.0.5"))))
    order = service_order(valid)
    assert order.before == (ServiceStep("db", ("slurmdbd",), "slurm_acct_db"), ServiceStep("ctl", ("slurmctld",), None),
                            ServiceStep("ctl2", ("slurmctld",), None))
    assert order.after == (ServiceStep("login1", ("login",), None),
                           ServiceStep("login2", ("login",), None))


def test_a_host_with_several_roles_is_taken_once_at_its_first_and_a_compute_node_is_left_to_the_batches():
    valid = resolve(small_cluster(login=(Host("ctl", address="10.9.0.1"), Host("gpu01", address="10.9.1.1"))))
    order = service_order(valid)
    assert order.before == (ServiceStep("ctl", ("slurmdbd", "slurmctld", "login"), "slurm_acct_db"),)
    assert order.before[0].head == "ctl (slurmdbd, slurmctld, login)" and order.after == ()


def dump(tmp_path: Path, stand_in: str, timeout_s: int = 30) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "mariadb-dump"
    tool.write_text("#!/bin/sh\n" + stand_in)
    tool.chmod(0o755)
    return subprocess.run(["sh", "-c", dump_command("slurm_acct_db", timeout_s, str(tmp_path / "backups"))],
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, text=True,
                          capture_output=True, timeout=60, check=False)


def test_a_dump_is_gzipped_readable_by_root_alone_and_named_with_its_size(tmp_path):
    done = dump(tmp_path, 'for a; do case $a in --result-file=*) echo "CREATE TABLE t ($*);" > "${a#*=}";; esac; '
                          'done\n')
    assert done.returncode == 0, done.stderr
    path, size = done.stdout.split()
    written = Path(path)
    assert written.parent == tmp_path / "backups" and written.name.startswith("slurm_acct_db-")
    assert written.name.endswith("Z.sql.gz") and int(size) == written.stat().st_size
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert gzip.decompress(written.read_bytes()).decode().startswith(
        "CREATE TABLE t (--single-transaction --databases slurm_acct_db --result-file=")


def test_a_dump_that_fails_or_runs_out_leaves_no_partial_file_and_says_so_by_its_status(tmp_path):
    partial = 'for a; do case $a in --result-file=*) echo partial > "${a#*=}";; esac; done\n'
    failed = dump(tmp_path, partial + "echo 'Got error: 2002' >&2; exit 2\n")
    assert failed.returncode == 2 and "Got error: 2002" in failed.stderr
    slow = dump(tmp_path, partial + "exec sleep 30\n", timeout_s=1)
    assert slow.returncode == 124
    assert list((tmp_path / "backups").iterdir()) == []
