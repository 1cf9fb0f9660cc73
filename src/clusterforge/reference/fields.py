"""The inventory reference: every field of every entry an inventory writes, from the pydantic models.

The entries are found by walking the fields' types from ``Cluster``, so a new entry appears without being listed
here. A field's row says its type, default, constraints and description, and, where the field becomes a key of a
Slurm file (``slurm_key`` in the model), that key with the releases whose key tables accept it.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterator
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ..errors import ClusterforgeError
from ..key_tables import cgroup_conf_keys, slurm_conf_keys
from ..model import Cluster
from ..versions import SUPPORTED
from .becomes import INTROS, NAMES, TEST_ONLY, becomes, slurm_link

_TABLED = {"slurm.conf": slurm_conf_keys, "cgroup.conf": cgroup_conf_keys}


def inventory_models(root: type[BaseModel] = Cluster) -> list[type[BaseModel]]:
    """``root`` and every model its fields hold, depth first in field order: the order an inventory nests them."""
    found: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        if model in found:
            return
        found.append(model)
        for info in model.model_fields.values():
            for inner in _models_in(info.annotation):
                visit(inner)

    visit(root)
    return found


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in typing.get_args(annotation):
        yield from _models_in(argument)


def slurm_key_of(info: FieldInfo) -> dict[str, str | None] | None:
    extra = info.json_schema_extra
    return extra.get("slurm_key") if isinstance(extra, dict) else None  # type: ignore[return-value]


def accepting_releases(file: str, key: str) -> str:
    """The supported releases whose key table accepts ``key``, as ranges: '21.08–25.11', '23.11–25.11'."""
    table = _TABLED[file]
    accepted = [v for v in SUPPORTED if (name := table(v).lookup(key)) == key and not table(v).is_defunct(name)]
    if not accepted:
        raise ClusterforgeError(f"{file} key {key} is in no supported release's key table")
    ranges: list[list[str]] = []
    for version in SUPPORTED:
        if version in accepted:
            if ranges and ranges[-1][-1] == str(SUPPORTED[SUPPORTED.index(version) - 1]):
                ranges[-1].append(str(version))
            else:
                ranges.append([str(version)])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in ranges)


def type_text(annotation: Any) -> str:
    """A field's type as an admin reads it, models linked to their section."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    if origin is Literal:
        return " \\| ".join(f"`{a!r}`" for a in arguments)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_text(a) for a in arguments)
    if origin is tuple:
        return f"tuple of {type_text(arguments[0])}"
    if origin in (dict, list):
        return f"{origin.__name__}[{', '.join(type_text(a) for a in arguments)}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


def default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    value = info.default_factory() if info.default is PydanticUndefined else info.default  # type: ignore[call-arg,misc]
    if isinstance(value, BaseModel):
        changed = value.model_dump(exclude_defaults=True)
        inner = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"`{type(value).__name__}({inner})`"
    return f"`{value!r}`"


def constraints_text(info: FieldInfo) -> str:
    bounds = (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "at least"),
              ("max_length", "at most"))
    parts = [f"{word} {getattr(item, name)}" for item in info.metadata for name, word in bounds
             if isinstance(item, annotated_types.BaseMetadata) and hasattr(item, name)]
    return ", ".join(parts)


def _cell(text: str) -> str:
    """Text for a table cell, read as written: outside `code`, Markdown's emphasis and HTML characters are escaped
    (a description's '<version>' is no tag, 'PriorityWeight*' no emphasis)."""
    parts = text.replace("\n", " ").split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside backticks
        parts[i] = (parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                    .replace("*", "\\*").replace("_", "\\_"))
    return "`".join(parts).replace("|", "\\|")


def becomes_text(model: type[BaseModel], name: str, info: FieldInfo) -> str:
    """What the field becomes: its Slurm key, linked to Slurm's documentation of it, with the releases whose key
    tables accept it; else what reference/becomes.py says; blank where nothing says."""
    key = slurm_key_of(info)
    if key is None:
        return becomes(model.__name__, name) or ""
    where = f"{key['file']}, on each {key['line']} line" if key["line"] else str(key["file"])
    tabled = key["file"] in _TABLED and key["line"] is None
    accepted = accepting_releases(str(key["file"]), str(key["key"])) if tabled else ""
    link = slurm_link(str(key["file"]), str(key["key"]), key["line"])
    return f"{link} ({where})" + (f"; accepted by {accepted}" if accepted else "")


def _row(model: type[BaseModel], name: str, info: FieldInfo) -> str:
    own_name = NAMES.get(model.__name__) if name == "name" else None
    description = own_name[0] if own_name else (info.description or "").strip()
    if not description:
        raise ClusterforgeError(f"{model.__name__}.{name} has no description: the reference cannot leave it blank")
    constraints = constraints_text(info)
    if constraints:
        description = f"{description} ({constraints})"
    return (f"| `{name}` | {type_text(info.annotation)} | {default_text(info)} | {_cell(description)} | "
            f"{becomes_text(model, name, info)} |")


def intro_line(model: type[BaseModel]) -> str:
    """The entry's own docstring (not one inherited from a base entry), else its line in reference/becomes.py."""
    doc = vars(model).get("__doc__")
    return inspect.cleandoc(doc) if doc else INTROS.get(model.__name__, "")


def model_section(model: type[BaseModel]) -> str:
    lines = [f"### {model.__name__}", ""]
    intro = intro_line(model)
    if intro:
        lines += [intro, ""]
    header = ["| Field | Type | Default | Description | Becomes |", "|---|---|---|---|---|"]
    fields = list(model.model_fields.items())
    real = [_row(model, n, i) for n, i in fields if f"{model.__name__}.{n}" not in TEST_ONLY]
    test_only = [_row(model, n, i) for n, i in fields if f"{model.__name__}.{n}" in TEST_ONLY]
    lines += header + real
    if test_only:
        lines += ["", "For test clusters only (never set on real machines):", "", *header, *test_only]
    return "\n".join(lines) + "\n"


# The area each module of clusterforge.model is about, as the page's sections name them.
AREAS = {
    "cluster": "The cluster", "hosts": "Hosts and NFS", "hardware": "Hardware profiles and GPUs",
    "stack": "The pinned stack and NCCL", "nodes": "Compute nodes", "fabric": "Fabric and topology",
    "partitions": "Partitions", "accounting": "Accounting: QOS, accounts and users", "vault": "Secrets (Vault)",
    "setup": "Host setup", "containers": "Containers", "health": "Node health", "monitoring": "Monitoring",
    "rest": "The REST API", "acceptance": "Acceptance", "admission": "Admission of nodes",
    "identity": "People and SSH access", "repair": "Automatic repair",
}


def area_of(model: type[BaseModel]) -> str:
    module = model.__module__.rsplit(".", 1)[-1]
    return AREAS.get(module, module)


def areas() -> dict[str, list[type[BaseModel]]]:
    """The entries by area, each area where its first entry is reached from Cluster."""
    grouped: dict[str, list[type[BaseModel]]] = {}
    for model in inventory_models():
        grouped.setdefault(area_of(model), []).append(model)
    return grouped


INTRO = """# Inventory fields

Every entry an inventory writes, starting from `Cluster`, grouped by area.
Each field has its type, default and meaning.
**Becomes** says what the field turns into on the cluster: a key of a Slurm file, an attribute in the accounting
database (`sacctmgr`), an export or mount, another file, or nothing outside clusterforge.
A Slurm key links to Slurm's own documentation of it.
For slurm.conf and cgroup.conf keys it also names the releases whose parsers accept the key.
clusterforge renders for Slurm {releases}.

These pages are generated from the inventory's pydantic models (`clusterforge.model`) at every build.
A misspelt field is an error: `clusterforge validate INVENTORY` names each problem with its file and line.
"""


def inventory_page() -> str:
    releases = ", ".join(str(v) for v in SUPPORTED)
    sections = [f"## {area}\n\n" + "\n".join(model_section(m) for m in models) for area, models in areas().items()]
    return "\n".join([INTRO.format(releases=releases), *sections])
