"""What one compute node should have, as the node health program reads it: rendered from the resolved inventory
(render/health.py) into a JSON file on the node, never rediscovered there."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

# Where the deploy puts them on every compute node.
EXPECTATIONS_PATH = "/etc/clusterforge/health.json"
STATE_DIR = "/var/lib/clusterforge/health"
# A site's own probes: every executable here, root's alone, is run under the probe bound; exiting non-zero is a
# finding that drains the node, its last line of output the reason's detail.
SITE_DIR = "/etc/clusterforge/health.d"

# What slurmd's RebootProgram (the health program's reboot mode) runs where the inventory names none: Health's default.
DEFAULT_REBOOT_PROGRAM = "/usr/sbin/reboot"

# The program's own bounds, which the inventory's validation holds the settings to: the whole check ends well within
# the 60 s after which slurmd kills it (the probes side by side, each within probe_timeout_s, then at most two
# scontrol calls of SCONTROL_TIMEOUT_S).
BOUND_S = 50
SCONTROL_TIMEOUT_S = 10

PROBES = ("gpus", "xid", "hardware", "infiniband", "mounts", "daemons", "site")

# An InfiniBand port's error counters as sysfs names them (ports/<n>/counters/<name>), the IBA's PortCounters.
IB_ERROR_COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                     "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
                     "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
                     "excessive_buffer_overrun_errors", "VL15_dropped")
# The counters the check watches, each with the most it may rise between two checks before the node drains (None:
# watched, in the metrics and the alert, never drained for). NVIDIA's NVSentinel NIC health monitor (github.com/
# NVIDIA/NVSentinel, docs/configuration/nic-health-monitor.md) takes any rise of the first three as fatal to a job,
# and symbol errors past 120 an hour (the IBTA's bit error rate of 1e-12): 10 over the default 300 s interval. The
# others it counts as degradation, not a fault: watched here.
LINK_ERRORS: dict[str, int | None] = {
    "link_downed": 0, "local_link_integrity_errors": 0, "excessive_buffer_overrun_errors": 0, "symbol_error": 10,
    "link_error_recovery": None, "port_rcv_errors": None, "port_rcv_remote_physical_errors": None,
    "port_xmit_discards": None}


@dataclass(frozen=True, slots=True)
class Hca:
    name: str                # as ibstat names it: mlx5_0
    min_rate: int | None     # Gb/s the port must train at, at least; None: any rate


@dataclass(frozen=True, slots=True)
class Expectations:
    node: str
    probes: tuple[str, ...] = PROBES
    gpu_type: str | None = None          # a substring of the NVML name, e.g. "h100"
    device_files: tuple[str, ...] = ()   # GPU i is the i-th
    sockets: int = 1
    cores_per_socket: int = 1
    threads_per_core: int = 1
    real_memory: int = 0                 # MiB
    # Declared HCAs; none declared: every InfiniBand port the node has, each at ``ib_rate`` at least.
    hcas: tuple[Hca, ...] = ()
    ib_rate: int | None = None
    mounts: tuple[str, ...] = ()
    daemons: tuple[str, ...] = ()        # systemd units that must be active
    fabric_manager: bool = False         # NVSwitch: nvidia-fabricmanager runs, every GPU's fabric is Completed
    xid_actions: dict[int, str] = field(default_factory=dict)  # the inventory's overrides of the Xid table
    # A file of /dev/kmsg-format records read after the kernel's own, for test clusters whose containers share
    # the host's kernel log; root's alone or ignored. Never set on real nodes.
    kernel_log_extra: str | None = None
    # A root-owned file holding the boot id, read instead of the kernel's where it exists: test clusters only, whose
    # containers share the host's kernel and so its boot id. Never set on real nodes.
    boot_id_file: str | None = None
    # The watched InfiniBand port counters, each with the most it may rise between two checks (links.py).
    link_errors: dict[str, int | None] = field(default_factory=lambda: dict(LINK_ERRORS))
    # A root-owned directory laid out as /sys/class/infiniband, read instead of it where it exists (ibsysfs.py): test
    # clusters only, whose machines have no HCA. Never set on real nodes.
    infiniband_sysfs: str | None = None
    probe_timeout_s: int = 20
    # After a reboot through Slurm, how long the check at boot waits for the node to register (ResumeTimeout).
    reboot_wait_s: int = 1200
    # The inventory's reboot program (Health.reboot_program), which the RebootProgram wrapper runs (health/reboot.py).
    reboot_program: str = DEFAULT_REBOOT_PROGRAM
    profile: str = ""
    # node exporter's textfile directory, where the check writes its metrics (health/metrics.py); None: none
    metrics_dir: str | None = None
    # The node's profile has an admission gate: back from a boot that held hardware faults, the check holds the node
    # for it (health/repaired.py).
    admission: bool = False

    @property
    def gpu_count(self) -> int:
        return len(self.device_files)

    @property
    def units(self) -> tuple[str, ...]:
        """The systemd units that must be active."""
        return self.daemons + (("nvidia-fabricmanager",) if self.fabric_manager else ())

    def to_json(self) -> str:
        data = asdict(self)
        data["xid_actions"] = {str(k): v for k, v in sorted(self.xid_actions.items())}
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Expectations:
        data = json.loads(text)
        known = set(cls.__dataclass_fields__)
        data = {k: v for k, v in data.items() if k in known}
        data["hcas"] = tuple(Hca(**h) for h in data.get("hcas", ()))
        data["xid_actions"] = {int(k): v for k, v in data.get("xid_actions", {}).items()}
        for key in ("probes", "device_files", "mounts", "daemons"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)
