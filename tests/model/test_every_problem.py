"""Every problem of an inventory at once (loader.every_problem, what `clusterforge validate` runs): the entries' type
mistakes and the cross-entry rules together, each named by where the entry sits in the cluster, with the value
given (never a secret's), on the real example inventory with mistakes written into it."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest
from golden_cases import PROD, ROOT, prod_edited

from clusterforge.errors import InventoryError, Problem
from clusterforge.loader import every_problem
from clusterforge.model import Profile
from clusterforge.model.base import deferring

def problems(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Problem]:
    monkeypatch.chdir(path.parent)
    with pytest.raises(InventoryError) as raised:
        every_problem(path.name)
    return list(raised.value.problems)


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


TYPO = ('Partition("debug", nodes="gpu-node-032", max_time=', 'Partition("debug", nodes="gpu-node-032", max_tme=')
WRONG_TYPE = ("    sockets=2,", '    sockets="two",')
MISSING_NODE = ('Partition("train", profiles=("dgx-h100",)', 'Partition("train", nodes="gpu-node-099", profiles=()')


def test_a_typo_a_wrong_type_and_a_missing_node_are_reported_together(tmp_path, monkeypatch):
    path = prod_edited(tmp_path, TYPO, WRONG_TYPE, MISSING_NODE)
    found = problems(path, monkeypatch)
    assert [(p.where, p.message, p.value, p.origin) for p in found] == [
        ("profiles[dgx-h100].sockets", "Input should be a valid integer, unable to parse string as an integer",
         "'two'", f"broken.py:{line_of(path, 'sockets=')}"),
        ("partitions[debug].max_tme", "unknown field of Partition; did you mean max_time?", None,
         f"broken.py:{line_of(path, 'max_tme=')}"),
        ("partitions[train].nodes", "gpu-node-099 is not a node of this cluster", None,
         f"broken.py:{line_of(path, 'gpu-node-099')}"),
    ]


def test_the_rules_find_nothing_more_than_the_type_mistake_where_the_rest_is_right(tmp_path, monkeypatch):
    # Every node names the profile left out, every partition those nodes or that profile: none is called unknown,
    # and no rule over all profiles (no profile at all, no GPU TRES, a GPU stack no profile uses) guesses.
    path = prod_edited(tmp_path, WRONG_TYPE)
    assert [str(p) for p in problems(path, monkeypatch)] == [
        "profiles[dgx-h100].sockets = 'two': Input should be a valid integer, unable to parse string as an integer "
        f"(broken.py:{line_of(path, 'sockets=')})"]


def test_an_entry_with_only_an_unknown_field_still_takes_part_in_the_rules(tmp_path, monkeypatch):
    # The debug partition keeps what it was written with: its missing node is still found.
    path = prod_edited(tmp_path, (TYPO[0], TYPO[1].replace("gpu-node-032", "gpu-node-033")))
    assert [(p.where, p.message) for p in problems(path, monkeypatch)] == [
        ("partitions[debug].max_tme", "unknown field of Partition; did you mean max_time?"),
        ("partitions[debug].nodes", "gpu-node-033 is not a node of this cluster"),
    ]


def test_a_node_range_with_a_wrong_field_is_named_by_its_names_and_its_nodes_are_not_called_unknown(
        tmp_path, monkeypatch):
    path = prod_edited(tmp_path, ('Nodes("gpu-node-[025-032]", address="10.0.1.[25-32]", profile="dgx-h100", '
                              'leaf="leaf04")',
                              'Nodes("gpu-node-[025-032]", address="10.0.1.[25-32]", profile="dgx-h100", leaf=4)'))
    # The debug partition is gpu-node-032, a node of the range left out.
    assert [(p.where, p.value) for p in problems(path, monkeypatch)] == [("nodes[gpu-node-[025-032]].leaf", "4")]


def test_a_field_holding_a_secret_is_named_without_its_value(tmp_path, monkeypatch):
    path = prod_edited(tmp_path, ('auth="approle")', 'auth="approle", db_password="hunter2-s3cret")'))
    (problem,) = problems(path, monkeypatch)
    assert problem.where == "vault.db_password" and problem.value is None
    assert "hunter2" not in str(problem) and "hunter2" not in repr(problem.to_json())


def test_a_wrong_value_at_the_cluster_itself_leaves_the_rules_running_on_the_rest(tmp_path, monkeypatch):
    path = prod_edited(tmp_path, ('    slurm_version="22.05",', '    slurm_version="22.05", disruption_budget="many",'),
                   ('nodes="gpu-node-032", max_time', 'nodes="gpu-node-033", max_time'))
    assert [(p.where, p.value) for p in problems(path, monkeypatch)] == [
        ("disruption_budget", "'many'"), ("partitions[debug].nodes", None)]


def test_an_entry_built_wrong_outside_the_cluster_is_named_by_its_class(tmp_path, monkeypatch):
    spare = ("cluster = Cluster(", 'SPARE = Profile("spare", sockets=[2], cores_per_socket=1, real_memory=1)\n\n'
                                   'cluster = Cluster(')
    assert [(p.where, p.value) for p in problems(prod_edited(tmp_path, spare), monkeypatch)] == [("Profile.sockets", "[2]")]
    # and beside the cluster's own problems, which the file's host_groups reports
    assert [(p.where, p.value) for p in problems(prod_edited(tmp_path, spare, WRONG_TYPE), monkeypatch)] == [
        ("Profile.sockets", "[2]"), ("profiles[dgx-h100].sockets", "'two'")]


def test_the_inventory_code_tripping_over_an_entry_built_wrong_reports_its_mistake_first(tmp_path, monkeypatch):
    path = prod_edited(tmp_path, WRONG_TYPE, ("cluster = Cluster(", "CPUS = DGX_H100.cpus\n\ncluster = Cluster("))
    found = problems(path, monkeypatch)
    assert [p.where for p in found] == ["Profile.sockets", "inventory"]
    assert f"broken.py:{line_of(path, 'CPUS =')}: AttributeError" in found[1].message


def test_the_example_inventory_is_still_valid(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert every_problem(PROD).name == "prod"


def test_an_entry_built_despite_its_mistakes_is_frozen_and_constructors_raise_outside():
    with deferring() as broken:
        profile = Profile("p", sockets="two", cores_per_socket=4, real_memory=1, nvswitch="sometimes")
    assert broken == [profile] and not profile.complete and not profile.whole
    assert [(p.where, p.value) for p in profile.type_errors] == [("sockets", "'two'"), ("nvswitch", "'sometimes'")]
    with pytest.raises(pydantic.ValidationError):
        profile.cores_per_socket = 8  # type: ignore[misc]
    with pytest.raises(InventoryError):
        Profile("p", sockets="two", cores_per_socket=4, real_memory=1)
