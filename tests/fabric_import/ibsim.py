"""Real `ibnetdiscover` output without InfiniBand hardware: Debian's ibsim simulates the fabric of a net file and
`ibsim-run ibnetdiscover` (the real tool, its umad calls sent to ibsim) discovers it.

Needs the packages in apt-packages.txt. Where they are missing the tests skip, unless
CLUSTERFORGE_REQUIRE_REALSLURM=1 (set by scripts/test.sh, as for the real-Slurm tests) makes that a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from needs import skip_or_fail

TOOLS = ("ibsim", "ibsim-run", "ibnetdiscover")
_STAMP = re.compile(r"^# Topology file: generated on .*$", re.MULTILINE)


def missing() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()]


def require() -> None:
    absent = missing()
    if absent:
        skip_or_fail(f"{', '.join(absent)} not installed (apt-get install ibsim-utils infiniband-diags)")


def discover(net_text: str, attach: tuple[str | None, ...] = (None,)) -> str:
    """What ibnetdiscover prints for the fabric, once per attachment point (a node id of the net file; None for
    ibsim's default, the first node): one fabric each, concatenated as an admin collects several fabrics. The
    generation time stamp is blanked, so the same fabric gives the same text."""
    require()
    with tempfile.TemporaryDirectory(prefix="clusterforge-ibsim-") as tmp:
        net = Path(tmp, "net")
        net.write_text(net_text)
        # ibsim's socket is named after the user and the simulator number (SIM_BASENAME): one per test run.
        env = {**os.environ, "IBSIM_SOCKNAME": f"cf{os.getpid()}"}
        log = open(Path(tmp, "ibsim.log"), "w")  # noqa: SIM115 - closed below, after the process
        sim = subprocess.Popen(["ibsim", "-s", str(net)], stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                               env=env, cwd=tmp, start_new_session=True)
        try:
            _wait_ready(Path(tmp, "ibsim.log"), sim)
            outputs = []
            for node in attach:
                run_env = dict(env, SIM_HOST=node) if node else env
                done = subprocess.run(["ibsim-run", "ibnetdiscover"], env=run_env, capture_output=True, text=True,
                                      timeout=60, check=False)
                assert done.returncode == 0, done.stderr
                outputs.append(_STAMP.sub("# Topology file: generated on (time)", done.stdout))
            return "".join(outputs)
        finally:
            os.killpg(sim.pid, signal.SIGTERM)
            sim.wait(timeout=10)
            log.close()


def _wait_ready(log: Path, sim: subprocess.Popen) -> None:
    deadline = time.monotonic() + 20
    while "Network simulator ready" not in log.read_text(errors="replace"):
        if sim.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"ibsim did not start:\n{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.02)
