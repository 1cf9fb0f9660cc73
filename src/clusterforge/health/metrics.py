"""What the check found, as Prometheus metrics for node exporter's textfile collector: the GPUs nvidia-smi lists (an
alert compares them with the profile's count), the findings of the last check, when it ran, the Xid events it
has counted since the node's state directory was made, and the watched InfiniBand port counters as it read them (an
alert fires while one rises, below the limit that drains). Written whole under a temporary name, then renamed, so node
exporter never reads half a file. Standard library only, like the rest of the check."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence

FILE = "clusterforge_health.prom"
XID_COUNTS = "xid-counts.json"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def counted(state_dir: str, codes: Sequence[str]) -> dict[str, int]:
    """The Xid events counted so far, with ``codes`` (xid79, ...) added and kept in the state directory."""
    path = os.path.join(state_dir, XID_COUNTS)
    try:
        with open(path, encoding="utf-8") as file:
            counts = {str(k): int(v) for k, v in json.load(file).items()}
    except (OSError, ValueError, AttributeError):
        counts = {}
    if codes:
        for code in codes:
            counts[code] = counts.get(code, 0) + 1
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as file:
            json.dump(counts, file, sort_keys=True)
        os.replace(tmp, path)
    return counts


IB_COUNTER = "clusterforge_health_ib_port_errors_total"


def text(node: str, profile: str, gpus: int | None, findings: int, xids: dict[str, int], now: float,
         ports: Mapping[str, Mapping[str, int]] | None = None) -> str:
    """``ports``: "<hca>/<port>" -> counter -> value."""
    n, p = _label(node), _label(profile)
    lines = ["# HELP clusterforge_health_findings Findings of the node's last health check.",
             "# TYPE clusterforge_health_findings gauge", f'clusterforge_health_findings{{node="{n}"}} {findings}',
             "# HELP clusterforge_health_last_check_timestamp_seconds When the node's last health check ended.",
             "# TYPE clusterforge_health_last_check_timestamp_seconds gauge",
             f'clusterforge_health_last_check_timestamp_seconds{{node="{n}"}} {now:.0f}']
    if gpus is not None:
        lines += ["# HELP clusterforge_health_gpus GPUs nvidia-smi listed at the node's last health check.",
                  "# TYPE clusterforge_health_gpus gauge",
                  f'clusterforge_health_gpus{{node="{n}",profile="{p}"}} {gpus}']
    lines += ["# HELP clusterforge_health_xid_events_total Xid events the health check counted on the node.",
              "# TYPE clusterforge_health_xid_events_total counter"]
    lines += [f'clusterforge_health_xid_events_total{{node="{n}",xid="{_label(code.removeprefix("xid"))}"}} '
              f"{count}" for code, count in sorted(xids.items())]
    # The HCA's own counter, reset with its port (a reboot, perfquery -R): Prometheus' increase() reads that as such.
    lines += [f"# HELP {IB_COUNTER} An InfiniBand port's error counter, as the node's last health check read it.",
              f"# TYPE {IB_COUNTER} counter"]
    for port, values in sorted((ports or {}).items()):
        hca, _, number = port.rpartition("/")
        lines += [f'{IB_COUNTER}{{node="{n}",hca="{_label(hca)}",port="{_label(number)}",counter="{_label(name)}"}} '
                  f"{value}" for name, value in sorted(values.items())]
    return "\n".join(lines) + "\n"


def write(directory: str, node: str, profile: str, gpus: int | None, findings: int, xids: dict[str, int],
          ports: Mapping[str, Mapping[str, int]] | None = None) -> None:
    """The metrics file in node exporter's textfile directory, where that directory exists (monitoring on)."""
    if not os.path.isdir(directory):
        return
    path = os.path.join(directory, FILE)
    tmp = f"{path}.{os.getpid()}.tmp"  # node exporter reads *.prom only
    with open(tmp, "w", encoding="utf-8") as file:
        file.write(text(node, profile, gpus, findings, xids, time.time(), ports))
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
