"""The deploy refuses an inventory whose Slurm release a host's OS does not ship (distributions.py), before any change
on any host, naming the host, its OS and the release it ships; a pinned version (a site repository's) or Slurm of
the inventory's release already on the host passes. Simulated hosts: the OS is what they report (not proven on a real
Ubuntu machine)."""

from __future__ import annotations

from deploy.fakedeploy import SimCluster, dump
from deploy.simhost import Sim

ALL = ("ctl", "gpu01", "gpu02", "gpu03", "gpu04", "login1")


def machines(cluster: SimCluster, os: str, **fields: object) -> None:
    for name in ALL:
        Sim(os=os, **fields).save(cluster.directory / f"{name}.json")


def test_debian_12_machines_and_an_inventory_for_24_11_are_refused_before_any_change(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11")
    machines(cluster, "debian 12")
    run = cluster.deploy()
    assert run.returncode != 0, dump(run)
    assert "the inventory's slurm_version='24.11' is not what the hosts' OS ships: ctl runs Debian 12" in run.output
    assert ("gpu01 runs Debian 12 (bookworm), which ships Slurm 22.05 (22.05.8-4+deb12u3), but the inventory says "
            "slurm_version='24.11'") in run.output
    assert "Nothing was changed on any host" in run.output
    assert "login1 runs Debian 12 (bookworm)" in run.output
    assert all(sim.events == [] for sim in run.sims.values()), {h: s.events for h, s in run.sims.items()}


def test_ubuntu_22_04_machines_are_told_their_release_21_08(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="22.05")
    machines(cluster, "ubuntu 22.04")
    run = cluster.deploy()
    assert run.returncode != 0, dump(run)
    assert "ctl runs Ubuntu 22.04 (jammy), which ships Slurm 21.08 (21.08.5-2ubuntu1)" in run.output
    assert "set slurm_version='21.08'" in run.output
    assert all(sim.events == [] for sim in run.sims.values())


def test_slurm_of_the_inventorys_release_already_installed_passes(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11")
    machines(cluster, "debian 12", packages=["slurm-client"], versions={"slurm-client": "24.11.5-1site1"})
    run = cluster.deploy()
    assert "which ships Slurm" not in run.output, dump(run)


def test_a_26_05_before_26_05_2_installed_is_refused_before_any_change(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="26.05")
    machines(cluster, "debian ", packages=["slurm-client"], versions={"slurm-client": "26.05.1-1"})
    run = cluster.deploy()
    assert run.returncode != 0, dump(run)
    assert ("gpu01 has Slurm 26.05.1-1, older than 26.05.2, the first 26.05 whose cgroup.conf takes "
            "CgroupJobIdPaths=yes") in run.output
    assert all(sim.events == [] for sim in run.sims.values())


def test_forky_machines_take_26_05_without_libpmix_and_with_munge(tmp_path):
    run = SimCluster(tmp_path / "sim", version="26.05").deploy()  # the hosts report forky: it ships 26.05
    assert run.returncode == 0, dump(run)
    for name, sim in run.sims.items():
        assert not [p for p in sim.packages if p.startswith("libpmix")], name
        assert "munge" in sim.packages, name
    assert "MpiDefault=none" in run.sims["ctl"].content("/etc/slurm/slurm.conf").decode()
    assert "CgroupJobIdPaths=yes" in run.sims["gpu01"].content("/etc/slurm/cgroup.conf").decode()


def test_forky_machines_with_auth_slurm_get_no_munge_and_a_second_run_changes_nothing(tmp_path):
    # forky's Slurm packages only recommend munge: nothing brings munge.service in, and nothing is there to disable
    # (systemctl refuses to disable a unit that does not exist, as the deploy found on the forky test cluster).
    cluster = SimCluster(tmp_path / "sim", version="26.05", auth="slurm")
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    for name, sim in run.sims.items():
        assert "munge" not in sim.packages and "munge.service" not in sim.units, name
    again = cluster.deploy()
    assert again.returncode == 0 and again.changed() == {}, dump(again)
