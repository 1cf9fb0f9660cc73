"""Rules for what depends on the Slurm release: auth, and the keys an inventory adds or removes."""

from __future__ import annotations

import pytest
from clusters import only_problem, small_cluster

from clusterforge.errors import InventoryError
from clusterforge.model import resolve
from clusterforge.render import slurm_files
from clusterforge.versions import SlurmVersion


def test_unknown_override_key_for_the_release_with_a_suggestion():
    cluster = small_cluster(slurm_conf_extra={"ReturnToServce": 1})
    assert only_problem(cluster).startswith(
        "slurm_conf_extra[ReturnToServce]: not a slurm.conf key in Slurm 22.05: the daemons would refuse to start; "
        "did you mean ReturnToService?")


def test_override_key_valid_only_from_a_later_release():
    cluster = small_cluster(slurm_conf_extra={"PrologTimeout": 60})
    assert only_problem(cluster, "24.11").startswith("slurm_conf_extra[PrologTimeout]: not a slurm.conf key in Slurm 24.11")
    assert resolve(cluster, SlurmVersion.parse("25.05")).slurm_conf["PrologTimeout"] == "60"


def test_cgroup_key_removed_in_a_release():
    cluster = small_cluster(cgroup_conf_extra={"ConstrainKmemSpace": "yes"})
    resolve(cluster)  # 22.05 still has the Kmem keys
    assert only_problem(cluster, "23.11").startswith("cgroup_conf_extra[ConstrainKmemSpace]: not a cgroup.conf key "
                                                     "in Slurm 23.11")


def test_defunct_key():
    cluster = small_cluster(cgroup_conf_extra={"CgroupAutomount": "yes"}, slurm_version="24.11")
    assert only_problem(cluster).startswith("cgroup_conf_extra[CgroupAutomount]: defunct in Slurm 24.11")


def test_key_the_model_owns():
    cluster = small_cluster(slurm_conf_extra={"gRestypes": "gpu,shard"})
    assert only_problem(cluster).startswith(
        "slurm_conf_extra[gRestypes]: set by the inventory (profiles[].gpus); change that instead")


def test_override_keys_take_slurms_spelling_and_none_removes():
    valid = resolve(small_cluster(slurm_conf_extra={"returntoservice": 1, "KillOnBadExit": None}))
    assert valid.slurm_conf["ReturnToService"] == "1" and "KillOnBadExit" not in valid.slurm_conf


def test_a_boolean_override_is_written_as_the_inventorys_own_flags_are():
    valid = resolve(small_cluster(slurm_conf_extra={"DisableRootJobs": True},
                                  cgroup_conf_extra={"IgnoreSystemd": False}))
    assert valid.slurm_conf["DisableRootJobs"] == "YES" and valid.cgroup_conf["IgnoreSystemd"] == "NO"
    files = slurm_files(valid)
    assert "DisableRootJobs=YES\n" in files["slurm.conf"] and "IgnoreSystemd=NO\n" in files["cgroup.conf"]
    # The same spelling as Default= of the partition the inventory marks default=True.
    assert " Default=YES " in files["slurm.conf"]


def test_auth_slurm_needs_23_11():
    assert only_problem(small_cluster(auth="slurm")).startswith(
        "auth: auth/slurm needs Slurm 23.11 or newer; this cluster runs 22.05")


def test_unsupported_slurm_version():
    with pytest.raises(InventoryError) as raised:
        resolve(small_cluster(slurm_version="20.11"))
    assert str(raised.value.problems[0]).startswith("slurm_version: Slurm 20.11 is not supported")


@pytest.mark.parametrize("release", ["21.08", "22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11"])
def test_keys_whose_table_entries_are_spaced_or_hold_digits_are_known_to_every_release(release):
    # slurm_conf_options[] spells these {"DefMemPerGPU" , S_P_UINT64}, {"SlurmdPidFile",  S_P_STRING} and
    # {"X11Parameters", ...}: an extraction that expected one space and letters only missed them, and an admin's
    # DefMemPerGPU (the memory a job gets per GPU) was refused as unknown.
    extra = {"DefMemPerGPU": 250_000, "DefCPUPerGPU": 12, "X11Parameters": "home_xauthority",
             "SlurmdPidFile": "/run/slurmd.pid"}
    valid = resolve(small_cluster(slurm_conf_extra=extra), SlurmVersion.parse(release))
    assert {k: valid.slurm_conf[k] for k in extra} == {k: str(v) for k, v in extra.items()}
