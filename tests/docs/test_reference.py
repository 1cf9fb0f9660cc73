"""The reference pages are generated from the code: every inventory field and every command appears, and what
cannot be documented (a field without a description, a command without exit statuses) stops the build."""

from __future__ import annotations

import inspect

import click
import pytest
from pydantic import BaseModel, Field

from clusterforge import model
from clusterforge.check.findings import ALL_GOOD, FINDINGS, UNCHECKED
from clusterforge.cli.exits import exit_statuses, statuses_of
from clusterforge.cli.fabric import DIFFERENT
from clusterforge.cli.plan_report import INCOMPLETE, NOTHING, PENDING
from clusterforge.errors import ClusterforgeError
from clusterforge.model.base import Entry
from clusterforge.reference.commands import command_section, commands_page, leaf_commands
from clusterforge.reference.fields import accepting_releases, inventory_models, inventory_page, model_section


def test_every_entry_the_model_exports_is_reached_from_cluster():
    exported = {getattr(model, name) for name in model.__all__}
    entries = {obj for obj in exported if inspect.isclass(obj) and issubclass(obj, Entry)}
    reached = set(inventory_models())
    # a base such as Association is documented through the entries built on it (Account, User)
    unreached = {entry for entry in entries - reached if not any(issubclass(r, entry) for r in reached)}
    assert unreached == set()


def test_every_field_of_every_entry_has_a_row():
    page = inventory_page()
    for entry in inventory_models():
        section = page.split(f"\n## {entry.__name__}\n", 1)[1].split("\n## ", 1)[0]
        for name in entry.model_fields:
            assert f"\n| `{name}` |" in section, f"{entry.__name__}.{name} missing"


def test_a_row_says_type_default_constraints_and_the_key_with_its_releases():
    page = inventory_page()
    assert ("| `priority_tier` | int | `1` | PriorityTier in slurm.conf; a partition that preempts another needs a "
            "higher one | `PriorityTier` (slurm.conf, on each PartitionName line) |") in page
    assert "`PriorityWeightQOS` (slurm.conf); accepted by 21.08–26.05 |" in page
    assert "| `uid` | int | required |" in page and "(≥ 1, ≤ 65533)" in page
    assert "| `controller` | [Host](#host) \\| None | `None` |" in page
    assert "| `setup` | [Setup](#setup) | `Setup()` |" in page


def test_a_description_is_shown_as_written_not_read_as_markup():
    page = inventory_page()
    assert "(enroot\\_&lt;version&gt;-1\\_amd64.deb)" in page       # no HTML tag <version>
    assert "PriorityWeight\\* in slurm.conf" in page                    # no emphasis
    assert "download it once and run `sha256sum FILE`" in page           # code stays code


def test_releases_are_ranges_of_the_tables_that_accept_the_key():
    assert accepting_releases("slurm.conf", "ClusterName") == "21.08–26.05"
    # slurm_keys/sc_*.txt: TLSType appears in 24.05; CoreSpecPlugin is defunct from 24.05 on
    assert accepting_releases("slurm.conf", "TLSType") == "24.05–26.05"
    assert accepting_releases("slurm.conf", "CoreSpecPlugin") == "21.08–23.11"
    with pytest.raises(ClusterforgeError, match="NoSuchKey"):
        accepting_releases("slurm.conf", "NoSuchKey")


def test_a_field_without_a_description_stops_the_page():
    class Undescribed(BaseModel):
        described: int = Field(default=1, description="it has one")
        bare: int = 2

    with pytest.raises(ClusterforgeError, match=r"Undescribed\.bare has no description"):
        model_section(Undescribed)


def test_every_command_is_on_the_page_with_its_exit_statuses():
    page = commands_page()
    names = [name for name, _ in leaf_commands()]
    assert {"clusterforge validate", "clusterforge check", "clusterforge fabric import",
            "clusterforge secrets rotate"} <= set(names)
    for name, command in leaf_commands():
        assert f":prog_name: {name}\n" in page
        assert f"[`{name}`](#{name.replace(' ', '-')})" in page
        for code, meaning in statuses_of(command).items():
            assert f"| {code} | {meaning} |" in page


def test_every_command_exits_0_or_2_at_least_and_says_so_in_its_help():
    for name, command in leaf_commands():
        statuses = statuses_of(command)
        assert statuses is not None and {0, 2} <= set(statuses), name
        help_text = command.get_help(click.Context(command, info_name=name))
        assert "Exit status:" in help_text and statuses[0] in help_text, name


def test_the_declared_statuses_are_the_ones_the_code_exits_with():
    commands = dict(leaf_commands())
    assert set(statuses_of(commands["clusterforge check"])) == {ALL_GOOD, FINDINGS, UNCHECKED}
    assert set(statuses_of(commands["clusterforge plan"])) == {NOTHING, PENDING, INCOMPLETE}
    assert DIFFERENT in statuses_of(commands["clusterforge fabric import"])


def test_a_command_without_exit_statuses_stops_the_page():
    @click.command()
    def bare() -> None:
        """Does something."""

    with pytest.raises(ClusterforgeError, match="declares no exit statuses"):
        command_section("clusterforge bare", bare)
    assert statuses_of(exit_statuses({0: "done"})(bare)) == {0: "done", 2: statuses_of(bare)[2]}
