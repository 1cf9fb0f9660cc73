"""Hardware profiles: what a kind of compute node has (CPU layout, memory, GPUs)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .admission import Admission
from .base import Entry, Named, slurm_key
from .repair import Repair
from .stack import GpuStack, Nccl


class Gpus(Entry):
    """The GPUs of a profile, and which CPU socket each one sits on.

    GPU *i* is the *i*-th device file of ``files`` (``/dev/nvidia[0-7]`` → GPU 0 is ``/dev/nvidia0``). Device minor
    numbers are not always in PCI order, so ``sockets`` is written from what the hardware says
    (``nvidia-smi topo -m``), never assumed.
    """

    type: str = Field(description="GRES type, e.g. 'h100'; matched as a substring of the NVML name",
                      json_schema_extra=slurm_key("gres.conf", "Type", line="NodeName"))
    count: int = Field(description="GPUs per node, the count in Gres=gpu:TYPE:COUNT of slurm.conf; as many as files "
                                   "names, where given")
    files: str | None = Field(default=None, description="device files as a hostlist, e.g. '/dev/nvidia[0-7]'",
                              json_schema_extra=slurm_key("gres.conf", "File", line="NodeName"))
    sockets: dict[int, list[int]] = Field(
        default_factory=dict, description="socket index -> GPU indices on that socket, e.g. {0: [0, 1, 2, 3]}",
        json_schema_extra=slurm_key("gres.conf", "Cores", line="NodeName")
    )
    autodetect: Literal["off", "nvml", "nvidia"] = Field(
        default="off",
        description="let slurmd detect the GPUs: 'nvml' (needs slurm-wlm-nvml-plugin), 'nvidia' (Slurm >= 24.11)",
        json_schema_extra=slurm_key("gres.conf", "AutoDetect")
    )


class Profile(Named):
    """A hardware profile shared by many nodes, e.g. a DGX H100."""

    sockets: int = Field(description="CPU sockets per node, Sockets in slurm.conf",
                         json_schema_extra=slurm_key("slurm.conf", "Sockets", line="NodeName"))
    cores_per_socket: int = Field(description="cores per socket, CoresPerSocket in slurm.conf",
                                  json_schema_extra=slurm_key("slurm.conf", "CoresPerSocket", line="NodeName"))
    threads_per_core: int = Field(default=1, description="hardware threads per core, ThreadsPerCore in slurm.conf; "
                                                         "CPUs is sockets x cores_per_socket x threads_per_core",
                                  json_schema_extra=slurm_key("slurm.conf", "ThreadsPerCore", line="NodeName"))
    real_memory: int = Field(description="MiB given to jobs; at most what `slurmd -C` reports, or the node drains",
                             json_schema_extra=slurm_key("slurm.conf", "RealMemory", line="NodeName"))
    gpus: Gpus | None = Field(default=None, description="the nodes' GPUs, their Gres in slurm.conf and gres.conf; "
                                                        "None: no GPUs",
                              json_schema_extra=slurm_key("slurm.conf", "Gres", line="NodeName"))
    features: tuple[str, ...] = Field(default=(), description="node features of every node of this profile, in "
                                                              "Features= of slurm.conf after the profile's name",
                                      json_schema_extra=slurm_key("slurm.conf", "Features", line="NodeName"))
    local_disk: str | None = Field(default=None, description="mount point of a node-local disk, e.g. '/raid' on a "
                                   "DGX: container data goes there, and slurmd waits until it is mounted")

    nvlink_domain: int | None = Field(
        default=None,
        description="GPUs per NVLink domain, as vendors name it (72 for GB200 NVL72), a multiple of gpus.count: "
                    "each Nodes entry of this profile is cut, in its hostlist order, into blocks of one domain's "
                    "nodes, a block topology named after the profile (Slurm 25.05+) that Partition(topology=) "
                    "gives; None: no such topology")
    nvswitch: bool = Field(default=False, description="the GPUs talk through NVSwitches (HGX/DGX H100): "
                                                      "nvidia-fabricmanager must run and every GPU's fabric be set "
                                                      "up, which the health check checks")
    ib_rate: int | None = Field(default=None, description="Gb/s every InfiniBand port of these nodes must train "
                                                          "at, at least (400 for NDR); None: any rate")
    hcas: tuple[str, ...] = Field(default=(), description="the RDMA devices of these nodes as `ibstat` names them "
                                                          "(mlx5_0, ...), compute and storage alike: the health "
                                                          "check expects them, NCCL may use only these; the rails' "
                                                          "HCAs are added where the fabric names them")
    gpu_stack: GpuStack | None = Field(default=None, description="this profile's GPU stack, instead of the "
                                                                 "cluster's stack.gpu")
    nccl: Nccl | None = Field(default=None, description="NCCL's settings for jobs on these nodes: /etc/nccl.conf "
                                                        "and every container's environment; None: NCCL's defaults")
    admission: Admission | None = Field(
        default=None, description="the tests a node of this profile must pass before it takes users' jobs, when "
                                  "new or back from a hardware drain (the admission gate), and that `clusterforge "
                                  "accept` runs; None: no gate and no acceptance for these nodes")
    repair: Repair | None = Field(
        default=None, description="automatic repair of these nodes after a hardware drain: a GPU reset, a reboot, a "
                                  "power cycle through their BMC; None: never repaired automatically")

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core

    @property
    def gpu_count(self) -> int:
        return self.gpus.count if self.gpus else 0
