"""Prove the real-Slurm harness with hand-written configs, on both Slurm versions.

The rendered-config tests use the same harness; if these fail, the harness (or
the machine) is broken, not the renderer. Needs root and the packages in
apt-packages.txt (24.11 and 26.05 also need build-debian-root.sh). Missing pieces skip;
CLUSTERFORGE_REQUIRE_REALSLURM=1 (set in CI) turns those skips into failures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from realslurm import harness  # tests/ is on pythonpath (pyproject.toml)

VERSIONS = ["22.05", "24.11", "26.05"]


@pytest.fixture
def scratch():
    with harness.scratch_dir() as path:
        yield path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    path.write_text(text)
    return path


def kv(keys: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in keys.items())


def write_cluster(scratch: Path, port: int, *, extra: str = "", partitions: str = "",
                  dbd_port: int | None = None) -> Path:
    """The minimal hand-written config; returns its directory."""
    etc = scratch / "etc"
    write(etc / "slurm.conf", f"""\
ClusterName=smoke
SlurmUser=slurm
AuthType=auth/munge
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
GresTypes=gpu
TopologyPlugin=topology/tree
{kv(harness.overrides(scratch, port, dbd_port=dbd_port))}{extra}
NodeName=n[1-2] NodeAddr=127.0.0.[2-3] CPUs=4 RealMemory=1000 Gres=gpu:h100:4 State=UNKNOWN
PartitionName=gpu Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP
{partitions}""")
    write(etc / "gres.conf", "NodeName=n[1-2] Name=gpu Type=h100 File=/dev/nvidia[0-3]\n")
    write(etc / "topology.conf", "SwitchName=leaf01 Nodes=n[1-2]\n")
    write(etc / "cgroup.conf", "CgroupPlugin=autodetect\nConstrainCores=yes\n"
                               "ConstrainDevices=yes\nConstrainRAMSpace=yes\n")
    return etc


@pytest.mark.realslurm
@pytest.mark.parametrize("version", VERSIONS)
def test_scontrol_shows_nodes_partition_topology(version, scratch):
    runtime = harness.require(version)
    etc = write_cluster(scratch, harness.free_port())

    with harness.running_slurmctld(runtime, etc, scratch) as ctld:
        nodes = {n["NodeName"]: n for n in harness.parse_oneliner(ctld.scontrol("-o", "show", "node"))}
        parts = harness.parse_oneliner(ctld.scontrol("-o", "show", "partition"))
        topo = harness.parse_topology(ctld.scontrol("show", "topology"))
        config = ctld.scontrol("show", "config")
        errors = ctld.errors()

    assert errors == []
    assert sorted(nodes) == ["n1", "n2"]
    for name, addr in (("n1", "127.0.0.2"), ("n2", "127.0.0.3")):
        assert nodes[name]["CPUTot"] == "4"
        assert nodes[name]["RealMemory"] == "1000"
        assert nodes[name]["Gres"] == "gpu:h100:4"
        assert nodes[name]["NodeAddr"] == addr
        assert nodes[name]["Partitions"] == "gpu"
    assert [(p["PartitionName"], p["Nodes"], p["State"], p["Default"]) for p in parts] == [
        ("gpu", "n[1-2]", "UP", "YES")]
    assert topo["leaf01"]["Nodes"] == "n[1-2]"
    assert topo["leaf01"]["Level"] == "0"
    assert f"SLURM_VERSION           = {version}." in config


@pytest.mark.realslurm
@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_key_is_reported_with_slurms_parse_error(version, scratch):
    runtime = harness.require(version)
    etc = write_cluster(scratch, harness.free_port(), extra="NoSuchKey=1\n")

    with pytest.raises(harness.DaemonFailed) as err, harness.running_slurmctld(runtime, etc, scratch):
        pass

    assert "unrecognized key: NoSuchKey" in str(err.value)
    assert "Unable to process configuration file" in str(err.value)


@pytest.mark.realslurm
@pytest.mark.parametrize("version", VERSIONS)
def test_keys_the_first_key_tables_missed_are_accepted(version, scratch):
    # key_tables.py: spaced or digit-holding entries of slurm_conf_options[], which validation now knows.
    from clusterforge.key_tables import slurm_conf_keys
    from clusterforge.versions import SlurmVersion

    keys = {"DefMemPerGPU": "8000", "DefCPUPerGPU": "2", "X11Parameters": "home_xauthority"}
    assert all(slurm_conf_keys(SlurmVersion.parse(version)).lookup(k) == k for k in keys)
    runtime = harness.require(version)
    etc = write_cluster(scratch, harness.free_port(), extra=kv(keys))

    with harness.running_slurmctld(runtime, etc, scratch) as ctld:
        config = ctld.scontrol("show", "config")
        errors = ctld.errors()

    assert errors == []
    assert "X11Parameters           = home_xauthority" in config


@pytest.mark.realslurm
@pytest.mark.parametrize("version", VERSIONS)
def test_accounting_runs_against_real_slurmdbd(version, scratch):
    runtime = harness.require(version, accounting=True)
    port, dbd_port, db_port = (harness.free_port() for _ in range(3))
    etc = write_cluster(scratch, port, dbd_port=dbd_port,
                        extra="AccountingStorageType=accounting_storage/slurmdbd\n",
                        partitions="PartitionName=prio Nodes=n[1-2] QOS=high AllowQos=high State=UP\n")
    dbd_conf = write(etc / "slurmdbd.conf", "AuthType=auth/munge\nSlurmUser=slurm\n"
                     "StorageType=accounting_storage/mysql\n"
                     + kv(harness.slurmdbd_overrides(scratch, dbd_port, db_port)))

    with harness.running_slurmdbd(runtime, dbd_conf, scratch) as dbd:
        # A partition QOS the database lacks is fatal for slurmctld (22.05 and 24.11).
        dbd.sacctmgr("add", "qos", "high")
        with harness.running_slurmctld(runtime, etc, scratch) as ctld:
            config = ctld.scontrol("show", "config")
            prio = harness.parse_oneliner(ctld.scontrol("-o", "show", "partition", "prio"))
            clusters = ctld.run("sacctmgr", "-n", "-P", "show", "cluster", "format=cluster").stdout

    assert "AccountingStorageType   = accounting_storage/slurmdbd" in config
    assert (prio[0]["QoS"], prio[0]["AllowQos"]) == ("high", "high")
    assert clusters.split() == ["smoke"]  # slurmctld registered itself


# ------------------------------------------------------------- parsers, no Slurm needed

def test_parse_oneliner_keeps_values_with_spaces_and_equals():
    line = ("NodeName=n1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUTot=4 Gres=gpu:h100:4 "
            "OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)  "
            "RealMemory=1000 AllocMem=0 State=DOWN+NOT_RESPONDING CfgTRES=cpu=4,mem=1000M,billing=4 "
            "AllocTRES= Reason=Not responding [slurm@2024-05-01T10:00:00] MCS_label=N/A")
    (rec,) = harness.parse_oneliner(line + "\n\n")
    assert rec["OS"] == "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"
    assert rec["CfgTRES"] == "cpu=4,mem=1000M,billing=4"
    assert rec["AllocTRES"] == ""
    assert rec["Reason"] == "Not responding [slurm@2024-05-01T10:00:00]"
    assert rec["MCS_label"] == "N/A"
    assert rec["CoresPerSocket"] == "1"


def test_parse_topology_by_switch():
    text = ("SwitchName=leaf01 Level=0 LinkSpeed=1 Nodes=n[1-8]\n"  # 22.05 and 24.11 alike
            "SwitchName=leaf02 Level=0 LinkSpeed=1 Nodes=n[9-16]\n"
            "SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-16] Switches=leaf[01-02]\n")
    topo = harness.parse_topology(text)
    assert list(topo) == ["leaf01", "leaf02", "spine"]
    assert topo["spine"]["Switches"] == "leaf[01-02]"
    assert topo["leaf02"]["Nodes"] == "n[9-16]"


def test_parse_topology_blocks():
    text = ("BlockName=b1 BlockIndex=0 Nodes=n1 BlockSize=1\n"
            "BlockName=b2 BlockIndex=1 Nodes=n2 BlockSize=1\n"
            "AggregatedBlock=b[1-2] BlockIndex=2 Nodes=n[1-2] BlockSize=2\n")  # 24.11, verbatim
    topo = harness.parse_topology(text)
    assert list(topo) == ["b1", "b2", "b[1-2]"]
    assert topo["b[1-2]"]["Nodes"] == "n[1-2]"
