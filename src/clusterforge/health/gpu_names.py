"""GPU types as Slurm compares them. slurmd's GPU autodetection (gpu/nvml, gpu/nvidia) takes the name NVML or the
driver gives a GPU, lower case with each space an underscore (gpu_common_underscorify_tolower, gpu_common.c:
"NVIDIA H100 80GB HBM3" is ``nvidia_h100_80gb_hbm3``), and a gres.conf Type matches a GPU where it is a
case-insensitive substring of that name (gres.conf(5)). The health check's model probe compares the same way, so a
type Slurm accepts never drains a node for "another model".

A type's or a GPU's family (``family``) is found one way for every rule that asks it: validation (which types must
match a known name, the oldest driver), the admission floors, and the names a message offers.
"""

from __future__ import annotations

import re

# The names NVML gives the Hopper data-centre GPUs this project targets (nvidia-smi's "Product Name"): a type that
# names H100 or H200 must match one of them, or the check would find every GPU "another model".
HOPPER_NAMES = ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA H200 NVL",
                "NVIDIA GH200 480GB", "NVIDIA H800")


# The GPU families clusterforge knows something of (a default floor, the oldest driver, the names NVML gives them).
FAMILIES = ("h100", "h200", "h800")
# A family as a word of the name: "NVIDIA H100 80GB HBM3", nvidia_h100_80gb_hbm3, H100, h100_sxm5, H100-SXM5-80GB,
# h100nvl; not gh200 (Grace Hopper: no H200's floors) and not h1000.
_FAMILY = re.compile(r"(?<![a-z0-9])(" + "|".join(FAMILIES) + r")(?![0-9])")


def family(name: str) -> str | None:
    """The family (one of FAMILIES) that a gres.conf Type or a GPU's product name names, or None."""
    found = _FAMILY.search(name.lower())
    return found.group(1) if found else None


def slurm_name(product: str) -> str:
    """A GPU's name as slurmd's autodetection holds it."""
    return "".join("_" if c == " " else c for c in product.strip().lower())


def matches(gpu_type: str, product: str) -> bool:
    """Whether a gres.conf Type matches the GPU nvidia-smi names ``product``, as Slurm matches it."""
    return gpu_type.lower() in slurm_name(product)


def working_types(kind: str) -> list[str]:
    """Types that match the known GPUs of family ``kind`` (e.g. "h100"): the family itself, and each full name as
    Slurm holds it."""
    names = [slurm_name(n) for n in HOPPER_NAMES if family(n) == kind]
    return [kind, *names] if names else []
