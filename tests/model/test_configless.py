"""Configless Slurm (Cluster.configless): slurm.conf enables it beside the site's own SlurmctldParameters, and
validation refuses, naming the entry, what slurmctld cannot serve to the compute nodes."""

from __future__ import annotations

from clusters import only_problem, small_cluster

from clusterforge.model import resolve


def test_configless_is_off_unless_asked_and_then_enabled_in_slurm_conf():
    assert "SlurmctldParameters" not in resolve(small_cluster()).slurm_conf
    assert resolve(small_cluster(configless=True)).slurm_conf["SlurmctldParameters"] == "enable_configless"


def test_the_sites_own_parameters_are_kept_before_it_and_it_is_never_twice():
    site = small_cluster(configless=True, slurm_conf_extra={"slurmctldparameters": "idle_on_node_suspend"})
    assert resolve(site).slurm_conf["SlurmctldParameters"] == "idle_on_node_suspend,enable_configless"
    given = small_cluster(configless=True, slurm_conf_extra={"SlurmctldParameters": "enable_configless"})
    assert resolve(given).slurm_conf["SlurmctldParameters"] == "enable_configless"


def test_removing_the_parameters_is_refused_with_configless():
    problem = only_problem(small_cluster(configless=True, slurm_conf_extra={"SlurmctldParameters": None}))
    assert problem.startswith("slurm_conf_extra[SlurmctldParameters]: configless needs")


def test_a_plugin_stack_by_another_path_is_refused_with_configless_only():
    extra = {"PlugStackConfig": "/opt/site/plugstack.conf"}
    problem = only_problem(small_cluster(configless=True, slurm_conf_extra=extra))
    assert problem.startswith("slurm_conf_extra[PlugStackConfig]: configless cannot serve it")
    assert resolve(small_cluster(slurm_conf_extra=extra)).slurm_conf["PlugStackConfig"] == "/opt/site/plugstack.conf"


def test_every_supported_release_takes_it():
    from clusterforge.versions import SUPPORTED

    for version in SUPPORTED:
        assert resolve(small_cluster(configless=True), version).configless
