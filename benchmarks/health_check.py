"""The node health check's run time on the running test cluster; prints p50, p99 and the slowest, asserts nothing.

    bash scripts/example.sh      # (or testbed/up.sh and a deploy): the cluster must be up and deployed
    python benchmarks/health_check.py [--node gpu01] [--runs 200] [--prolog]

Runs /usr/sbin/clusterforge-health on one node as slurmd runs it (as root, an empty environment but
SLURMD_NODENAME), one run after another, or with --prolog the job prolog (/usr/sbin/clusterforge-prolog, with
Slurm's SLURM_JOB_ID and SLURM_JOB_GPUS for a job holding two GPUs, which reads only the GPUs), and times each on the node itself, so that SSH is not in the figure. A run
is the whole check: every probe (nvidia-smi is the test cluster's stand-in), the kernel log from the cursor, and
`scontrol show node` on the controller. The node must be healthy: the check then only reads.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", default="gpu01")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--prolog", action="store_true", help="time the job prolog instead of the check")
    args = parser.parse_args()
    what, command = (("prolog", "SLURM_JOB_ID=1 SLURM_JOB_GPUS=0,1 /usr/sbin/clusterforge-prolog") if args.prolog
                     else ("health check", "/usr/sbin/clusterforge-health"))
    loop = (f"for i in $(seq {args.runs}); do s=$(date +%s%N); "
            f"env -i SLURMD_NODENAME={args.node} {command} >/dev/null; rc=$?; "
            "e=$(date +%s%N); echo \"$(( (e - s) / 1000 )) $rc\"; done")
    out = subprocess.run(["bash", str(REPO / "testbed" / "ssh.sh"), args.node, loop], check=True,
                         capture_output=True, text=True, timeout=60 * args.runs).stdout
    runs = [line.split() for line in out.splitlines() if line.strip()]
    failed = sum(rc != "0" for _, rc in runs)
    times = sorted(int(us) / 1000 for us, _ in runs)
    p99 = statistics.quantiles(times, n=100)[98]
    print(f"{what} on {args.node}: {len(times)} runs, p50 {statistics.median(times):.0f} ms, "
          f"p99 {p99:.0f} ms, slowest {times[-1]:.0f} ms; {failed} run(s) found something")


if __name__ == "__main__":
    main()
