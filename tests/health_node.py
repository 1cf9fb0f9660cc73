"""A compute node as the node health program sees it, in a directory: the program as the deploy ships it, and the
stand-ins of what it asks (tests/health/test_program.py says how each behaves), shared by the health program's tests
(test_program, test_repaired, test_evidence)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from clusterforge.health.expect import Expectations
from clusterforge.render.programs import health_program

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "check" / "fixtures"
SMI = (FIXTURES / "h100-sxm-x8.nvidia-smi-q.txt").read_text()
PYTHON = "/usr/bin/python3"


# slurmctld's reservations (the admission gate's holds, an admin's) are lines of a file, each as 26.05's `scontrol -o
# show reservation` prints it; "Duplicate reservation name" where one exists (slurm_errno.c). An active MAINT one that
# names the node (by its name, or in one bracket range: gpu[01-04]) puts MAINTENANCE+RESERVED in its state; an active
# one names itself in ReservationName= (one, the last, as 24.11 and 26.05 print it, where the node is in several). While
# $NODE/controller-down exists every call fails, as scontrol does with no slurmctld; while $NODE/refuse-reservations
# exists slurmctld answers and refuses every reservation (slurm_errno.c's words).
SCONTROL = """#!/bin/sh
echo "scontrol $*" >> "$NODE/calls"
if [ -e "$NODE/controller-down" ]; then
  echo "slurm_load_node error: Unable to contact slurm controller (connect failure)" >&2; exit 1
fi
lists() {  # whether the reservation line $1 is active and names the node $2
  case "$1" in *" State=ACTIVE "*) ;; *) return 1 ;; esac
  nodes=$(printf '%s\\n' "$1" | sed 's/.* Nodes=\\([^ ]*\\) .*/\\1/')
  [ "$nodes" = "$2" ] && return 0
  prefix=${nodes%%\\[*}; number=${2#"$prefix"}
  [ "$prefix" != "$nodes" ] && [ "$number" != "$2" ] || return 1
  ranges=${nodes#*\\[}
  for part in $(echo "${ranges%]}" | tr , ' '); do
    low=${part%-*}; high=${part#*-}
    [ ${#number} -eq ${#low} ] && [ "$number" -ge "$low" ] 2>/dev/null && [ "$number" -le "$high" ] && return 0
  done
  return 1
}
case "$1" in
  create)
    name=${3#ReservationName=}
    if [ -e "$NODE/refuse-reservations" ]; then
      echo "Error creating the reservation: Requested node configuration is not available" >&2; exit 1
    fi
    if grep -q "^ReservationName=$name " "$NODE/reservations" 2>/dev/null; then
      echo "Error creating the reservation: Duplicate reservation name" >&2; exit 1
    fi
    for arg in "$@"; do case "$arg" in Nodes=*) nodes=${arg#Nodes=} ;; Flags=*) flags=${arg#Flags=} ;; esac; done
    { printf 'ReservationName=%s StartTime=2026-11-24T10:00:00 EndTime=2027-11-24T10:00:00 ' "$name"
      printf 'Duration=365-00:00:00 Nodes=%s NodeCnt=1 CoreCnt=112 Features=(null) PartitionName=(null) ' "$nodes"
      printf 'Flags=%s,SPEC_NODES TRES=cpu=224 AllowedPartitions=(null) QOS=(null) Users=root ' "$flags"
      printf 'Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) MaxStartDelay=(null)\\n'
    } >> "$NODE/reservations"
    echo "Reservation created: $name" ;;
  -o)
    if [ -s "$NODE/reservations" ]; then cat "$NODE/reservations"; else echo "No reservations in the system"; fi ;;
  show)
    state=$(cat "$NODE/state"); maint=""; in=""
    if [ -e "$NODE/reservations" ]; then
      while read -r line; do
        lists "$line" "$4" || continue
        in=" ReservationName=$(printf '%s\\n' "$line" | sed 's/^ReservationName=\\([^ ]*\\) .*/\\1/')"
        case "$line" in *[=,]MAINT[,\\ ]*) maint="+MAINTENANCE+RESERVED" ;; esac
      done < "$NODE/reservations"
    fi
    printf 'NodeName=%s Arch=x86_64 CoresPerSocket=56 State=%s ThreadsPerCore=2 Reason=%s%s\\n' \\
          "$4" "$state$maint" "$(cat "$NODE/reason")" "$in" ;;
  update)
    for arg in "$@"; do case "$arg" in
      State=DRAIN) grep -q DRAIN "$NODE/state" || sed -i 's/$/+DRAIN/' "$NODE/state" ;;
      State=UNDRAIN) sed -i 's/+DRAIN//' "$NODE/state"; : > "$NODE/reason" ;;
      Reason=*) printf '%s [root@2026-11-24T10:00:00]' "${arg#Reason=}" > "$NODE/reason" ;;
    esac; done ;;
esac
"""
SLURMD = """#!/bin/sh
echo "NodeName=$(hostname) CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063425"
echo "UpTime=1-00:00:00"
"""
SYSTEMCTL = """#!/bin/sh
shift; for unit in "$@"; do grep -qx "$unit" "$NODE/inactive" 2>/dev/null && echo inactive || echo active; done
"""
# The journal of the kernel's messages since boot: $NODE/journal, or none, as journalctl says it.
JOURNALCTL = """#!/bin/sh
echo "journalctl $*" >> "$NODE/journal-calls"
[ -e "$NODE/journal-fails" ] && { echo "Failed to get journal access: Input/output error" >&2; exit 1; }
cat "$NODE/journal" 2>/dev/null || echo "-- No entries --"
"""
NVIDIA_SMI = """#!/bin/sh
[ -e "$NODE/smi-hangs" ] && exec sleep 600
if [ "$1" = -r ]; then
  echo "nvidia-smi $*" >> "$NODE/resets"
  ls "$NODE/evidence" > "$NODE/evidence-at-reset" 2>/dev/null
  [ -e "$NODE/reset-fails" ] && { echo "Unable to reset GPU $3: In use by another client"; exit 255; }
  echo "GPU $3 was successfully reset."; exit 0
fi
cat "$NODE/smi.txt"
"""


def without_gpus(text: str, minors: set[int]) -> str:
    """The capture less the blocks of the GPUs with these minor numbers (derived here, not captured)."""
    head, *blocks = text.split("\nGPU ")
    kept = [b for b in blocks if not any(f"Minor Number                          : {m}\n" in b for m in minors)]
    return "\nGPU ".join([head, *kept])


class Node:
    """A compute node as the program sees it, in a directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.program = root / "clusterforge-health.pyz"  # as the deploy ships it (render/programs.py)
        self.program.write_bytes(health_program())
        self.bin = root / "bin"
        self.bin.mkdir()
        for name, text in {"scontrol": SCONTROL, "slurmd": SLURMD, "systemctl": SYSTEMCTL,
                           "nvidia-smi": NVIDIA_SMI, "journalctl": JOURNALCTL}.items():
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        self.dev = root / "dev"
        self.dev.mkdir()
        for minor in range(8):
            (self.dev / f"nvidia{minor}").symlink_to("/dev/null")
        self.kmsg = root / "kmsg"
        self.kmsg.write_text("")
        self.kernel_log = root / "kernel.log"
        self.kernel_log.write_text("")
        self.boot_id = root / "boot_id"
        self.boot_id.write_text("boot-1\n")
        self.state_dir = root / "health-state"
        self.site_dir = root / "health.d"
        self.set(state="IDLE", reason="", smi=SMI)
        self.expect = Expectations(
            node="gpu01", gpu_type="h100", device_files=tuple(str(self.dev / f"nvidia{m}") for m in range(8)),
            sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000, mounts=("/",),
            daemons=("munge",), kernel_log_extra=str(self.kernel_log), probe_timeout_s=5)
        self.seq = 0

    def set(self, **files: str) -> None:
        for name, text in files.items():
            (self.root / ("smi.txt" if name == "smi" else name)).write_text(text)

    def kernel(self, message: str, prefix: int = 4, extra: bool = False) -> None:
        """A record of the kernel's log (or of the ``extra`` source), as /dev/kmsg gives it:
        <prefix>,<seq>,<usec>,<flags>;<message>."""
        self.seq += 1
        with (self.kernel_log if extra else self.kmsg).open("a") as file:
            file.write(f"{prefix},{self.seq},{self.seq * 1000},-;{message}\n")

    def reboot(self) -> None:
        """Another boot: a new boot id, and a kernel log that starts again."""
        number = int(self.boot_id.read_text().split("-")[1]) + 1
        self.boot_id.write_text(f"boot-{number}\n")
        self.kmsg.write_text("")
        self.seq = 0

    def run(self, *args: str, **slurm_env: str) -> subprocess.CompletedProcess[str]:
        expect = self.root / "health.json"
        expect.write_text(self.expect.to_json())
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "NODE": str(self.root), "SLURMD_NODENAME": "gpu01",
               "CLUSTERFORGE_HEALTH_EXPECT": str(expect), "CLUSTERFORGE_HEALTH_STATE": str(self.state_dir),
               "CLUSTERFORGE_HEALTH_SITE_DIR": str(self.site_dir), "CLUSTERFORGE_HEALTH_KMSG": str(self.kmsg),
               "CLUSTERFORGE_HEALTH_BOOT_ID": str(self.boot_id), **self.evidence_env, **slurm_env}
        code = ("import sys; sys.path.insert(0, sys.argv[1]); from clusterforge_health.health.program import main; "
                "sys.exit(main(sys.argv[2:]))")
        return subprocess.run([PYTHON, "-I", "-S", "-c", code, str(self.program), *args], env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    def launch(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The check through the launcher the deploy installs (render/health.py), on this node's program."""
        from clusterforge.model.settings import HEALTH_PROGRAM
        from clusterforge.render.health import PROGRAM, launcher

        program = self.root / "clusterforge-health"
        program.write_text(launcher(HEALTH_PROGRAM).replace(repr(PROGRAM), repr(str(self.program))))
        program.chmod(0o755)
        expect = self.root / "health.json"
        expect.write_text(self.expect.to_json())
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "NODE": str(self.root), "SLURMD_NODENAME": "gpu01",
               "CLUSTERFORGE_HEALTH_EXPECT": str(expect), "CLUSTERFORGE_HEALTH_STATE": str(self.state_dir),
               "CLUSTERFORGE_HEALTH_SITE_DIR": str(self.site_dir), "CLUSTERFORGE_HEALTH_KMSG": str(self.kmsg),
               "CLUSTERFORGE_HEALTH_BOOT_ID": str(self.boot_id), **self.evidence_env}
        return subprocess.run([str(program), *args], env=env, capture_output=True, text=True, timeout=120,
                              check=False)

    @property
    def evidence_env(self) -> dict[str, str]:
        """Where the evidence before a reset or a reboot goes, and the HCAs' counters it reads: the node's own."""
        return {"CLUSTERFORGE_HEALTH_EVIDENCE": str(self.root / "evidence"),
                "CLUSTERFORGE_HEALTH_SYS_INFINIBAND": str(self.root / "sys-infiniband")}

    @property
    def state(self) -> str:
        return (self.root / "state").read_text()

    @property
    def reason(self) -> str:
        return (self.root / "reason").read_text()

    def reserve(self, name: str, nodes: str = "gpu01", flags: str = "MAINT,IGNORE_JOBS", state: str = "ACTIVE") -> None:
        """A reservation slurmctld holds, as an admin (or the gate) made it: the line `scontrol -o show reservation`
        prints for it."""
        with (self.root / "reservations").open("a") as file:
            file.write(f"ReservationName={name} StartTime=2026-11-24T10:00:00 EndTime=2026-11-24T11:00:00 "
                       f"Duration=01:00:00 Nodes={nodes} NodeCnt=2 CoreCnt=224 Features=(null) PartitionName=(null) "
                       f"Flags={flags},SPEC_NODES TRES=cpu=448 AllowedPartitions=(null) QOS=(null) Users=root "
                       f"Groups=(null) Accounts=(null) Licenses=(null) State={state} BurstBuffer=(null) "
                       "MaxStartDelay=(null)\n")

    @property
    def reservations(self) -> list[str]:
        """The names of the reservations slurmctld holds."""
        path = self.root / "reservations"
        lines = path.read_text().splitlines() if path.exists() else []
        return [line.split()[0].removeprefix("ReservationName=") for line in lines]

    @property
    def updates(self) -> list[str]:
        calls = self.root / "calls"
        lines = calls.read_text().splitlines() if calls.exists() else []
        return [line for line in lines if line.startswith("scontrol update")]
