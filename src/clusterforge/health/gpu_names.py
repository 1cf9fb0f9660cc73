"""GPU types as Slurm compares them. slurmd's GPU autodetection (gpu/nvml, gpu/nvidia) takes the name NVML or the
driver gives a GPU, lower case with each space an underscore (gpu_common_underscorify_tolower, gpu_common.c:
"NVIDIA H100 80GB HBM3" is ``nvidia_h100_80gb_hbm3``), and a gres.conf Type matches a GPU where it is a
case-insensitive substring of that name (gres.conf(5)). The health check's model probe compares the same way, so a
type Slurm accepts never drains a node for "another model".
"""

from __future__ import annotations

# The names NVML gives the Hopper data-centre GPUs this project targets (nvidia-smi's "Product Name"): a type that
# names H100 or H200 must match one of them, or the check would find every GPU "another model".
HOPPER_NAMES = ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA H200 NVL",
                "NVIDIA GH200 480GB", "NVIDIA H800")


def slurm_name(product: str) -> str:
    """A GPU's name as slurmd's autodetection holds it."""
    return "".join("_" if c == " " else c for c in product.strip().lower())


def matches(gpu_type: str, product: str) -> bool:
    """Whether a gres.conf Type matches the GPU nvidia-smi names ``product``, as Slurm matches it."""
    return gpu_type.lower() in slurm_name(product)


def working_types(family: str) -> list[str]:
    """Types that match the known GPUs whose name holds ``family`` (e.g. "h100"): the family itself, and each full
    name as Slurm holds it."""
    names = [slurm_name(n) for n in HOPPER_NAMES if family in slurm_name(n)]
    return [family, *names] if names else []
