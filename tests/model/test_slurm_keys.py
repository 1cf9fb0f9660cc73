"""A field that says which Slurm key it becomes (slurm_key in the model) is held to it: the key is one the key tables
know, where they cover the file, and the renderers write it, as the golden files show. The inventory reference
prints these keys, so a wrong one would mislead an admin."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterforge.key_tables import cgroup_conf_keys, slurm_conf_keys
from clusterforge.model.base import slurm_key
from clusterforge.reference.fields import inventory_models, slurm_key_of
from clusterforge.versions import SUPPORTED

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
TABLES = {"slurm.conf": slurm_conf_keys, "cgroup.conf": cgroup_conf_keys}

DECLARED = [(f"{model.__name__}.{name}", key) for model in inventory_models()
            for name, info in model.model_fields.items() if (key := slurm_key_of(info)) is not None]


def golden_texts(file: str) -> list[str]:
    return [path.read_text() for path in sorted(GOLDEN.glob(f"*/expected/{file}"))]


def written(text: str, key: str, line: str | None) -> bool:
    if line is None:
        # a key of its own line, or (pyxis.conf) an option on the plugin's line
        return re.search(rf"^{re.escape(key)}=|\s{re.escape(key)}=", text, re.MULTILINE) is not None
    return re.search(rf"^{re.escape(line)}=\S+.*\s{re.escape(key)}=", text, re.MULTILINE) is not None


def test_fields_declare_keys():
    assert len(DECLARED) > 40


@pytest.mark.parametrize(("field", "key"), DECLARED, ids=[field for field, _ in DECLARED])
def test_the_renderers_write_the_declared_key(field, key):
    texts = golden_texts(key["file"])
    assert texts, f"no golden {key['file']}"
    assert any(written(text, key["key"], key["line"]) for text in texts), (
        f"{field} says it becomes {key['key']} in {key['file']}, but no golden {key['file']} has it")


TABLED = [(field, key) for field, key in DECLARED if key["file"] in TABLES and key["line"] is None]


@pytest.mark.parametrize(("field", "key"), TABLED, ids=[field for field, _ in TABLED])
def test_a_top_level_key_is_spelt_as_some_release_spells_it(field, key):
    table = TABLES[key["file"]]
    assert any(table(v).lookup(key["key"]) == key["key"] for v in SUPPORTED), (
        f"{field}: {key['key']} is in no release's {key['file']} key table, spelt so")


def test_the_written_check_tells_a_line_key_from_a_key_of_its_own():
    text = "NodeName=n1 RealMemory=10\nPartitionName=p Nodes=n1\n"
    assert written(text, "RealMemory", "NodeName")
    assert not written(text, "RealMemory", "PartitionName")
    assert not written(text, "MaxTime", "PartitionName")
    assert written("PriorityWeightAge=1\n", "PriorityWeightAge", None)


def test_only_rendered_files_can_be_named():
    with pytest.raises(ValueError, match="enroot.conf"):
        slurm_key("enroot.conf", "ENROOT_DATA_PATH")
