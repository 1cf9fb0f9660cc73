"""Every test's environment: the test cluster's inventory (inventories/vagrant.py) reads Enroot and Pyxis from the
artifact mirror beside the clone, as scripts/example.sh and the e2e tier point it there. Without a mirror it pins
NVIDIA's Enroot package by a placeholder digest, which validation refuses (model/placeholders.py), as it should
for a site that has not pinned it; a test that wants no mirror removes the variable itself."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("CLUSTERFORGE_ARTIFACTS", str(Path(__file__).resolve().parents[2] / "shared" / "artifacts"))
