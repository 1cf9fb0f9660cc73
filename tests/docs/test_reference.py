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
from clusterforge.reference.commands import EXAMPLES, command_section, commands_page, leaf_commands
from clusterforge.reference.becomes import FIELDS, NAMES, TEST_ONLY
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
        section = page.split(f"\n### {entry.__name__}\n", 1)[1].split("\n### ", 1)[0]
        for name in entry.model_fields:
            assert f"\n| `{name}` |" in section, f"{entry.__name__}.{name} missing"


def test_a_row_says_type_default_constraints_and_the_key_with_its_releases():
    page = inventory_page()
    assert ("| `priority_tier` | int | `1` | PriorityTier in slurm.conf; a partition that preempts another needs a "
            "higher one | [`PriorityTier`](https://slurm.schedmd.com/slurm.conf.html#SECTION_PARTITION-CONFIGURATION) "
            "(slurm.conf, on "
            "each PartitionName line) |") in page
    assert ("[`PriorityWeightQOS`](https://slurm.schedmd.com/slurm.conf.html#OPT_PriorityWeightQOS) (slurm.conf); "
            "accepted by 21.08–26.05 |") in page
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
        assert f"\n## {name}\n" in page
        assert f"[`{name}`](#{name.replace(' ', '-')})" in page
        for code, meaning in statuses_of(command).items():
            assert f"| {code} | {meaning} |" in page


def test_every_command_exits_0_or_2_at_least_and_says_so_in_its_help():
    for name, command in leaf_commands():
        statuses = statuses_of(command)
        assert statuses is not None and {0, 2} <= set(statuses), name
        help_text = command.get_help(click.Context(command, info_name=name))
        # --help wraps each status's text to the terminal: compared word by word
        assert "Exit status:" in help_text and " ".join(statuses[0].split()) in " ".join(help_text.split()), name


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


def _rows(page: str, entry: str) -> dict[str, list[str]]:
    section = page.split(f"\n### {entry}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `")]
    return {row[0].removeprefix("| `").removesuffix("`"): row for row in rows}


def test_every_field_says_what_it_becomes():
    page = inventory_page()
    blank = [f"{entry.__name__}.{name}" for entry in inventory_models()
             for name, row in _rows(page, entry.__name__).items() if row[-1].strip(" |") == ""]
    assert blank == []


def test_the_becomes_table_names_only_fields_that_exist():
    existing = {f"{entry.__name__}.{name}" for entry in inventory_models() for name in entry.model_fields}
    assert set(FIELDS) - existing == set()
    assert set(TEST_ONLY) <= existing
    assert set(NAMES) <= {entry.__name__ for entry in inventory_models() if "name" in entry.model_fields}


def test_the_names_the_issue_named_become_their_slurm_keys():
    page = inventory_page()
    assert "[`ClusterName`](https://slurm.schedmd.com/slurm.conf.html#OPT_ClusterName)" in (
        _rows(page, "Cluster")["name"][-1])
    assert "[`PartitionName`](https://slurm.schedmd.com/slurm.conf.html#OPT_PartitionName)" in (
        _rows(page, "Partition")["name"][-1])
    assert "`SwitchName` (topology.conf)" in _rows(page, "Leaf")["name"][-1]
    # the accounting attributes are the ones accounts/plan.py sets
    assert "[`MaxTRESPerUser`](https://slurm.schedmd.com/sacctmgr.html#OPT_MaxTRESPerUser)" in (
        _rows(page, "Qos")["max_tres_per_user"][-1])
    assert "[`GrpTRESMins`](https://slurm.schedmd.com/sacctmgr.html#OPT_GrpTRESMins)" in (
        _rows(page, "User")["grp_tres_mins"][-1])
    assert "/etc/exports.d" in _rows(page, "NfsExport")["options"][-1]
    assert "Options= of the mount unit" in _rows(page, "NfsMount")["options"][-1]


def test_each_name_has_its_own_text_and_each_entry_an_intro():
    page = inventory_page()
    named = [entry.__name__ for entry in inventory_models() if "name" in entry.model_fields]
    texts = [_rows(page, entry)["name"][3] for entry in named]
    assert len(set(texts)) == len(texts), texts
    for entry in inventory_models():
        section = page.split(f"\n### {entry.__name__}\n", 1)[1]
        assert not section.lstrip().startswith("|"), f"{entry.__name__} has no intro line"


def test_test_only_fields_are_apart_and_entries_are_grouped_by_area():
    page = inventory_page()
    health = page.split("\n### Health\n", 1)[1].split("\n### ", 1)[0]
    real, test_only = health.split("For test clusters only", 1)
    assert "| `kernel_log_extra` |" in test_only and "| `kernel_log_extra` |" not in real
    assert "| `probes` |" in real
    assert [line for line in page.splitlines() if line.startswith("## ")][:3] == [
        "## The cluster", "## Hosts and NFS", "## Hardware profiles and GPUs"]


def test_every_command_has_an_example_of_itself_and_every_option_in_its_table():
    page = commands_page()
    for name, command in leaf_commands():
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        options = section.split("**Options**", 1)[1].split("**Exit status**", 1)[0]
        for param in command.params:
            if isinstance(param, click.Option):
                assert f"| `{param.get_help_record(click.Context(command))[0]}` |" in options, (name, param.name)
        example = section.split("```bash\n", 1)[1].split("\n```", 1)[0]
        assert example.startswith(f"{name} "), (name, example)
        words = [word for word in example.split() if word.startswith("--")]
        known = {opt for param in command.params for opt in getattr(param, "opts", [])}
        assert set(words) <= known, f"{name}: the example gives options it does not have: {set(words) - known}"
    assert set(EXAMPLES) == {name for name, _ in leaf_commands()}


def test_a_command_without_an_example_stops_the_page():
    @exit_statuses({0: "done"})
    @click.command()
    def bare() -> None:
        """Does something."""

    with pytest.raises(ClusterforgeError, match="has no example"):
        command_section("clusterforge bare", bare)
