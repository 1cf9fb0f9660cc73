"""The golden cases: one folder per case under tests/golden, an inventory.py or a case.toml naming one."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from clusterforge.distributions import shipping
from clusterforge.loader import load_cluster
from clusterforge.model import Cluster, ValidCluster, resolve
from clusterforge.versions import TOPOLOGY_BLOCK, TOPOLOGY_YAML, SlurmVersion

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
UPDATE = os.environ.get("CLUSTERFORGE_UPDATE_GOLDEN") == "1"
STARTER = ROOT / "inventories" / "prod.py"  # the example inventory, placeholders and all: `clusterforge init` writes it


def filled(text: str) -> str:
    """The starter's text with its placeholders filled as a site would: each ``placeholder(example, what)`` by its
    example, each digest of 64 zeros by a digest."""
    assert text.count('"0" * 64') == 2 and "placeholder(" in text
    text = text.replace('"0" * 64', '"5" * 64').replace("placeholder(", "_filled(")
    imports_end = text.index("\n)\n", text.index("from clusterforge.model import")) + 3
    return text[:imports_end] + "\n\ndef _filled(example, what):\n    return example\n" + text[imports_end:]


def _filled_prod() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="clusterforge-prod-"))
    atexit.register(shutil.rmtree, directory, True)
    path = directory / "prod.py"
    path.write_text(filled(STARTER.read_text()))
    return path


PROD = _filled_prod()  # the example inventory as a site fills it, which the command tests run and edit


def prod_edited(directory: Path, *edits: tuple[str, str]) -> Path:
    """The filled example inventory with each (old, new) edit made, ``old`` found there exactly once, as
    ``directory/broken.py``."""
    text = PROD.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = directory / "broken.py"
    path.write_text(text)
    return path


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    inventory: Path
    slurm_version: str | None

    @property
    def expected(self) -> Path:
        return self.folder / "expected"

    def cluster(self, **overrides: object) -> Cluster:
        cluster = load_cluster(self.inventory)
        if overrides:
            extra = {**cluster.slurm_conf_extra, **overrides}
            cluster = cluster.model_copy(update={"slurm_conf_extra": extra})
        return cluster

    def valid(self, **overrides: object) -> ValidCluster:
        return resolve(self.cluster(**overrides), SlurmVersion.parse(self.slurm_version) if self.slurm_version else None)


def cases() -> list[Case]:
    found = []
    for folder in sorted(p for p in GOLDEN.iterdir() if p.is_dir()):
        spec = folder / "case.toml"
        if spec.exists():
            data = tomllib.loads(spec.read_text())
            found.append(Case(folder.name, folder, ROOT / data["inventory"], data.get("slurm_version")))
        else:
            found.append(Case(folder.name, folder, folder / "inventory.py", None))
    return found


def refusal(cluster: Cluster, version: SlurmVersion) -> str | None:
    """What validation says where a golden inventory cannot run on ``version``, as a pattern of its message; None
    where it can: topology/block before the release that has it, several topologies (or a profile's NVLink domains)
    before topology.yaml, and a site directory on a release only forky ships (its archive has no SSSD)."""
    if cluster.fabric is not None and cluster.fabric.plugin == "block" and version < TOPOLOGY_BLOCK:
        return "has no topology/block"
    if cluster.topologies and version < TOPOLOGY_YAML:
        return "several need topology.yaml"
    if any(p.nvlink_domain is not None for p in cluster.profiles) and version < TOPOLOGY_YAML:
        return "NVLink domains are a topology of their own, which needs topology.yaml"
    shippers = shipping(version)
    directory = cluster.identity is not None and cluster.identity.directory is not None
    if directory and shippers and not any(d.sssd for d in shippers):
        return "no SSSD"
    return None
