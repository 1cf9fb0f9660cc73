"""Node health: the check clusterforge installs on every compute node as Slurm's HealthCheckProgram."""

from __future__ import annotations

from pydantic import Field

from ..health.expect import DEFAULT_REBOOT_PROGRAM, LINK_ERRORS, PROBES
from ..health.xid import Override as XidAction
from .base import Entry, slurm_key


class Health(Entry):
    """What the node health check looks at and how often. It compares each node with what the inventory says it
    has and drains it with a ``cf:`` reason on a finding; it lifts only its own drains."""

    enabled: bool = Field(default=True, description="install the check on every compute node and have slurmd run "
                                                    "it; False: no HealthCheckProgram")
    interval: int = Field(default=300, description="seconds between two checks of a node, HealthCheckInterval; at "
                                                   "least the check's own bound (60)",
                          json_schema_extra=slurm_key("slurm.conf", "HealthCheckInterval"))
    job_checks: bool = Field(default=True, description="a GPU check before and after every job, Slurm's Prolog and "
                                                       "Epilog: a job whose node fails it is requeued elsewhere "
                                                       "and the node drained; one whose process outlives it drains "
                                                       "the node until the GPU is free")
    reboot_program: str = Field(default=DEFAULT_REBOOT_PROGRAM, description="what reboots a node for `scontrol "
                                "reboot`: an absolute path, arguments allowed; slurmd's RebootProgram is "
                                "clusterforge's wrapper, which keeps the evidence of the node's hardware faults first",
                                json_schema_extra=slurm_key("slurm.conf", "RebootProgram"))
    reboot_timeout: int = Field(default=1200, description="seconds a node rebooted through Slurm may take to come "
                                "back before Slurm sets it DOWN (an H100 server's POST takes minutes), "
                                "ResumeTimeout; also how long the check at boot waits to drain a node that came "
                                "back sick", json_schema_extra=slurm_key("slurm.conf", "ResumeTimeout"))
    probes: tuple[str, ...] = Field(default=PROBES, description="what is checked: any of " + ", ".join(PROBES))
    probe_timeout: int = Field(default=20, description="seconds one probe (nvidia-smi, slurmd -C, ibstat, ...) may "
                                                       "take before it counts as hung, which is a finding; 1 to 30")
    xid: dict[int, XidAction] = Field(default_factory=dict, description="Xid number (any) -> 'record' (never "
                                      "drains), 'reset' (drains until the GPU is reset through clusterforge-health "
                                      "reset, or the node reboots) or 'reboot' (drains until the node reboots; "
                                      "'drain' is the same), over clusterforge's table from NVIDIA's Xid catalog")
    mounts: tuple[str, ...] = Field(default=(), description="mount points a node must have, besides the NFS mounts "
                                                            "of compute hosts (where nfs.mount_now) and the profile's "
                                                            "local disk (with containers)")
    link_errors: dict[str, int | None] = Field(
        default_factory=dict, description="InfiniBand port error counter (its name under sysfs's ports/N/counters/) "
        "-> the most it may rise between two checks before the node drains, held until the counter is reset "
        "(perfquery -R, a reboot); None: watched, in the metrics and the alert, never drained for. Over "
        "clusterforge's defaults, after NVIDIA's NVSentinel NIC health monitor: "
        + ", ".join(f"{name} {'watched' if limit is None else limit}" for name, limit in LINK_ERRORS.items())
        + " (its 120 an hour, the IBTA's bit error rate of 1e-12, over a 300 s interval)")
    kernel_log_extra: str | None = Field(
        default=None, description="test clusters only: a root-owned file of /dev/kmsg records read after the "
                                  "kernel's own (containers share the host's kernel log); never on real nodes")
    boot_id_file: str | None = Field(
        default=None, description="test clusters only: a root-owned file that holds the machine's boot id, read "
                                  "instead of the kernel's where it exists (containers share the host's kernel, so "
                                  "its boot id; the test cluster's reboot writes a new one); never on real nodes")
    infiniband_sysfs: str | None = Field(
        default=None, description="test clusters only: a root-owned directory laid out as /sys/class/infiniband, "
                                  "read instead of it where it exists (containers have no HCA); ignored unless root's "
                                  "alone all the way down, with no link in it; never on real nodes")
