"""What the controller built from source (Pyxis' library, Enroot's package), kept on the machine that runs the deploy,
so that a later run or another cluster with the same inputs uploads it instead of building it again: the site's own
build cache, beside the artifact cache (roles/artifacts.py), in ``$XDG_CACHE_HOME/clusterforge/builds/``.

A build is kept under the digest of everything it was made from: the source's sha256, the build's commands (which
name the Slurm release Pyxis is built against, and the flags), the builder's OS release and architecture. A
different source, release, OS or architecture is a different entry, so it is built; a kept file whose sha256 no
longer matches the one recorded beside it is ignored, and built again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .artifacts import cache_dir


def builds_dir() -> Path:
    return cache_dir().parent / "builds"


@dataclass(frozen=True, slots=True)
class BuildInputs:
    what: str                 # "pyxis", "enroot"
    source_sha256: str
    commands: str             # the build, as the controller runs it
    os: tuple[str, str]       # the builder's /etc/os-release ID and VERSION_ID
    arch: str                 # dpkg's architecture

    @property
    def key(self) -> str:
        text = json.dumps([self.what, self.source_sha256.lower(), self.commands, list(self.os), self.arch])
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def entry(self) -> Path:
        return builds_dir() / f"{self.what}-{self.key[:32]}"


def lookup(inputs: BuildInputs) -> bytes | None:
    """The kept build of these inputs, where there is one whose bytes are those recorded."""
    try:
        data = (inputs.entry / "product").read_bytes()
        recorded = json.loads((inputs.entry / "inputs.json").read_text())["product_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if hashlib.sha256(data).hexdigest() == recorded else None


def keep(inputs: BuildInputs, data: bytes) -> None:
    """Kept whole or not at all: written under temporary names, the record last."""
    entry = inputs.entry
    entry.mkdir(parents=True, exist_ok=True)
    record = {"what": inputs.what, "source_sha256": inputs.source_sha256.lower(), "os": list(inputs.os),
              "arch": inputs.arch, "commands": inputs.commands, "product_sha256": hashlib.sha256(data).hexdigest()}
    for name, content in (("product", data), ("inputs.json", (json.dumps(record, indent=1) + "\n").encode())):
        with tempfile.NamedTemporaryFile(dir=entry, delete=False) as handle:
            handle.write(content)
        os.replace(handle.name, entry / name)
