"""Rules for the node health check: what cannot work is refused where the inventory writes it."""

from __future__ import annotations

from ...health.expect import BOUND_S, IB_ERROR_COUNTERS, PROBES, SCONTROL_TIMEOUT_S
from ...health.xid import MAX_XID
from .check import Check
from .paths import WHAT, plain_command, plain_path

# slurmd kills the program after 60 s: a probe's bound and two scontrol calls must fit in the program's own bound.
MAX_PROBE_TIMEOUT = BOUND_S - 2 * SCONTROL_TIMEOUT_S
MIN_INTERVAL = 60
MAX_REBOOT_TIMEOUT = 65535


def health(check: Check) -> None:
    health = check.cluster.health
    if not health.enabled:
        return
    if health.interval < MIN_INTERVAL:
        check.add("health.interval", f"{health.interval} s is shorter than the check's own bound: at least "
                  f"{MIN_INTERVAL} (slurmd gives a check 60 s)", health, "interval")
    if not 1 <= health.probe_timeout <= MAX_PROBE_TIMEOUT:
        check.add("health.probe_timeout", f"{health.probe_timeout} s: 1 to {MAX_PROBE_TIMEOUT}, so that the probes "
                  f"and the drain fit in the check's {BOUND_S} s", health, "probe_timeout")
    for probe in health.probes:
        if probe not in PROBES:
            check.add("health.probes", f"unknown probe {probe!r}; the probes are {', '.join(PROBES)}", health,
                      "probes")
    if not health.probes:
        check.add("health.probes", "no probe: the check would find nothing wrong with any node; leave probes out "
                  "for all of them, or say Health(enabled=False)", health, "probes")
    for number in health.xid:
        if not 1 <= number <= MAX_XID:
            check.add(f"health.xid[{number}]", f"Xid {number} is not an Xid number (1 to {MAX_XID})", health, "xid",
                      str(number))
    for name, limit in health.link_errors.items():
        if name not in IB_ERROR_COUNTERS:
            check.add(f"health.link_errors[{name}]", f"{name!r} is not an InfiniBand port error counter; they are "
                      f"{', '.join(IB_ERROR_COUNTERS)}", health, "link_errors", name)
        elif limit is not None and limit < 0:
            check.add(f"health.link_errors[{name}]", f"{limit}: the most {name} may rise between two checks, 0 "
                      "(any rise drains) or more; None: never drains", health, "link_errors", name)
    if not plain_command(health.reboot_program):
        check.add("health.reboot_program", f"{health.reboot_program!r}: slurmd runs it without a PATH, give {WHAT}, "
                  "and plain words as its arguments", health, "reboot_program")
    if not MIN_INTERVAL <= health.reboot_timeout <= MAX_REBOOT_TIMEOUT:
        check.add("health.reboot_timeout", f"{health.reboot_timeout} s: {MIN_INTERVAL} to {MAX_REBOOT_TIMEOUT} "
                  "(Slurm keeps ResumeTimeout in 16 bits)", health, "reboot_timeout")
    for path in (*health.mounts, *(p for p in (health.kernel_log_extra, health.boot_id_file, health.infiniband_sysfs)
                                   if p)):
        if not plain_path(path):
            check.add("health", f"{path!r} is not {WHAT}", health)
