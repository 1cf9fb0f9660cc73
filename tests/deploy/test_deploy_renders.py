"""The pure pieces the roles upload: /etc/hosts lines, NFS exports and mount units, the slurmd GPU drop-in, the
host list, the MariaDB password hash and the SQL that sets it, the daemons' log directory."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import pytest
from clusters import small_cluster

from clusterforge.model import Accounting, Host, Nfs, NfsExport, NfsMount, resolve
from clusterforge.render import etc_hosts, mariadb_sql, nfs, render_all, slurmd_dropin
from clusterforge.roles.mariadb import native_password_hash
from clusterforge.secrets import Secret


def nfs_cluster(**nfs_fields):
    fields = dict(server=Host("nfs1", address="10.9.0.5"),
                  exports=(NfsExport(path="/export/home", clients="10.9.0.0/16"),
                           NfsExport(path="/export/data", options=("ro", "sync", "no_root_squash"))),
                  mounts=(NfsMount(export="/export/home", mount_point="/home"),))
    fields.update(nfs_fields)
    return resolve(small_cluster(nfs=Nfs(**fields), login=(Host("login1", address="10.9.0.7"),)))


def test_machines_lists_each_host_once_with_all_its_groups():
    valid = nfs_cluster(server=Host("ctl", address="10.9.0.1"))
    found = {m.name: m.groups for m in valid.machines}
    assert list(found) == ["ctl", "login1", "gpu01", "gpu02", "gpu03", "gpu04"]
    assert found["ctl"] == ("controller", "database", "nfs")
    gpu = next(m for m in valid.machines if m.name == "gpu01")
    assert gpu.device_files == ("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3")


def test_etc_hosts_has_every_addressed_host_aligned():
    assert etc_hosts.lines(nfs_cluster()) == [
        "10.9.0.1 ctl", "10.9.0.7 login1", "10.9.0.5 nfs1",
        "10.9.1.1 gpu01", "10.9.1.2 gpu02", "10.9.1.3 gpu03", "10.9.1.4 gpu04",
    ]


def test_kernel_exports_one_line_per_export():
    body = [line for line in nfs.exports(nfs_cluster()).splitlines() if not line.startswith("#")]
    assert body == ["/export/home 10.9.0.0/16(rw,sync,no_subtree_check,root_squash)",
                    "/export/data *(ro,sync,no_root_squash)"]


def test_ganesha_exports_carry_access_and_squash_per_client():
    text = nfs.ganesha_conf(nfs_cluster(software="ganesha"))
    first, second = text.split("EXPORT {")[1:]
    assert "Path = /export/home;" in first and "Clients = 10.9.0.0/16;" in first
    assert "Access_Type = RW;" in first and "Squash = Root_Squash;" in first
    assert "Access_Type = RO;" in second and "Squash = No_Root_Squash;" in second
    assert text.count("{") == text.count("}")
    core = nfs.ganesha_conf(nfs_cluster(software="ganesha", ganesha_core={"allow_set_io_flusher_fail": "true"}))
    assert "NFS_CORE_PARAM {\n    Protocols = 3, 4;\n    allow_set_io_flusher_fail = true;\n}" in core


@pytest.mark.parametrize("path", ["/home", "/shared/data-sets", "/srv/a b", "/.hidden/x", "/"])
def test_mount_unit_names_are_what_systemd_expects(path):
    if shutil.which("systemd-escape") is None:
        pytest.skip("systemd-escape is not installed")
    expected = subprocess.run(["systemd-escape", "--path", "--suffix=mount", path], capture_output=True,
                              text=True, check=True).stdout.strip()
    assert nfs.unit_name(path) == expected


def test_mount_unit_mounts_the_export_from_the_server_address():
    valid = nfs_cluster()
    unit = nfs.mount_unit(valid, valid.nfs.mounts[0])
    assert "What=10.9.0.5:/export/home\nWhere=/home\nType=nfs\n" in unit
    assert "Options=defaults\n" in unit  # _netdev is implied by a mount unit's network dependencies
    assert "WantedBy=remote-fs.target" in unit


def test_slurmd_waits_for_every_gpu_device_file():
    valid = resolve(small_cluster())
    machine = next(m for m in valid.machines if m.device_files)
    dropin = slurmd_dropin.render(valid, replace(machine, node=replace(machine.node, device_files=(
        "/dev/nvidia0", "/dev/nvidia1"))))
    script = dropin.split("ExecStartPre=/bin/sh -c '")[1].rsplit("'", 1)[0]
    # systemd turns $$ into $; the shell then sees an ordinary loop
    shell = script.replace("$$", "$").replace("seq 120", "seq 1").replace("sleep 1", "true")
    assert subprocess.run(["sh", "-c", shell.replace("/dev/nvidia", "/dev/null-not-here")],
                          capture_output=True, text=True).stderr.strip().endswith(
        "/dev/null-not-here0 /dev/null-not-here1")
    tmp_ok = shell.replace("[ -c $f ]", "[ -e /dev/null ]")
    assert subprocess.run(["sh", "-c", tmp_ok]).returncode == 0


def test_mariadb_hash_is_mysql_native_password():
    # MariaDB: SELECT PASSWORD('password') -> *2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19
    assert native_password_hash(Secret(b"password", "pw")) == "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"


@pytest.mark.parametrize(("accounting", "database", "user"), [
    ({}, "slurm_acct_db", "slurm"),
    ({"database": "site_acct", "user": "acct_writer"}, "site_acct", "acct_writer"),
])
def test_mariadb_sql_makes_the_database_and_sets_the_users_password_by_its_hash(accounting, database, user):
    valid = resolve(small_cluster(accounting=Accounting(**accounting)))
    password_hash = native_password_hash(Secret(b"password", "pw"))
    assert mariadb_sql.render(valid, password_hash) == (
        f"CREATE DATABASE IF NOT EXISTS `{database}`;\n"
        f"CREATE USER IF NOT EXISTS '{user}'@'localhost';\n"
        f"ALTER USER '{user}'@'localhost' IDENTIFIED BY PASSWORD '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19';\n"
        f"GRANT ALL ON `{database}`.* TO '{user}'@'localhost';\n")


def test_every_daemon_logs_in_the_directory_the_deploy_gives_the_slurm_user():
    from deploy.steps import footprint

    valid = resolve(small_cluster())
    files = render_all(valid)
    assert "SlurmctldLogFile=/var/log/slurm/slurmctld.log\n" in files["slurm.conf"]
    assert "SlurmdLogFile=/var/log/slurm/slurmd.log\n" in files["slurm.conf"]
    assert "LogFile=/var/log/slurm/slurmdbd.log\n" in files["slurmdbd.conf"]
    assert "/var/log/slurm" in footprint(valid, ("controller", "database")).paths


def test_pmix_library_follows_mpi_default_and_the_release():
    from clusterforge.roles.packages import PMIX_LINKS, pmix_library
    from deploy.steps import footprint

    old, new, none = (resolve(small_cluster()), resolve(small_cluster(slurm_version="24.11")),
                      resolve(small_cluster(slurm_conf_extra={"MpiDefault": "none"})))
    assert pmix_library(old) == ["libpmix2"]
    assert PMIX_LINKS["amd64"] == "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so"
    assert PMIX_LINKS["arm64"] == "/usr/lib/aarch64-linux-gnu/pmix2/lib/libpmix.so"
    # The host state reads the links only where a host may need one.
    assert PMIX_LINKS["amd64"] in footprint(old, ("compute",)).paths
    assert pmix_library(new) == ["libpmix2t64"] and PMIX_LINKS["amd64"] not in footprint(new, ("compute",)).paths
    assert pmix_library(none) == [] and PMIX_LINKS["amd64"] not in footprint(none, ("compute",)).paths


def test_host_groups_come_from_the_machine_list():
    from clusterforge.inventory import host_groups

    cluster = small_cluster(nfs=Nfs(server=Host("ctl", address="10.9.0.1")), login=(Host("login1"),))
    groups = host_groups(cluster, ssh_user="root")
    assert [name for name, _ in groups.controller] == ["ctl"] == [name for name, _ in groups.nfs]
    assert [name for name, _ in groups.compute] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    ctl = dict(groups.controller)["ctl"]
    assert ctl["ssh_hostname"] == "10.9.0.1" and ctl["ssh_user"] == "root"
    assert ctl["clusterforge_machine"].groups == ("controller", "database", "nfs")
    assert "ssh_hostname" not in dict(groups.login)["login1"]
    gpu = dict(groups.compute)["gpu02"]
    assert gpu["clusterforge_node"].name == "gpu02" and gpu["clusterforge_machine"].device_files[-1] == "/dev/nvidia3"


def test_a_controller_that_runs_jobs_is_in_the_controller_and_compute_groups():
    from clusterforge.inventory import host_groups

    groups = host_groups(small_cluster(controller=Host("gpu01", address="10.9.1.1")), ssh_user="root")
    controller, compute = dict(groups.controller), dict(groups.compute)
    assert list(controller) == ["gpu01"] and "gpu01" in compute
    assert controller["gpu01"] is compute["gpu01"]  # one host, one set of data
    assert controller["gpu01"]["clusterforge_machine"].groups == ("controller", "compute")
