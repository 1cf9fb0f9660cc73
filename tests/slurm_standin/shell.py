"""The stand-in's commands as programs: sinfo, scontrol, sbatch, squeue, scancel and srun. A shell text of the
controller's runs in a real sh with them first on its PATH (run_shell), answered by the test's own ``Slurm`` over a
socket (served.py), so drains.py's loops, sbatch's here-documents and `|| echo` fallbacks are the shell's, not a
regex's. A program the test starts and leaves running (the node's health check, the gate's launcher) is given a
directory of them that read the cluster from a state file, answer, and write it back (bin_dir, main)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from clusterforge.slurm.commands import Answer

from . import served

if TYPE_CHECKING:
    from .slurm import Slurm

COMMANDS = ("sinfo", "scontrol", "sbatch", "squeue", "scancel", "srun")
TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"
STATE = "SLURM_STANDIN_STATE"


def bin_dir(directory: Path) -> Path:
    """The commands, written into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in COMMANDS:
        path = directory / name
        path.write_text(f"#!{sys.executable}\nimport sys\nsys.path[:0] = [{str(TESTS)!r}, {str(SRC)!r}]\n"
                        "from slurm_standin.shell import main\nsys.exit(main())\n")
        path.chmod(0o755)
    return directory


_CLIENTS: list[tempfile.TemporaryDirectory] = []


def _clients() -> Path:
    """The commands as served.py's clients, written once for this test process (their text never changes)."""
    if not _CLIENTS:
        _CLIENTS.append(tempfile.TemporaryDirectory(prefix="slurm-standin-bin-"))
        served.client_dir(Path(_CLIENTS[0].name), COMMANDS)
    return Path(_CLIENTS[0].name)


def save(slurm: Slurm, path: Path) -> None:
    path.write_bytes(pickle.dumps(slurm))


def load(path: Path) -> Slurm:
    return pickle.loads(path.read_bytes())


@contextlib.contextmanager
def changing(path: Path) -> Iterator[Slurm]:
    """The cluster of the state file ``path``, for a test to read or change while a program it started may run the
    commands meanwhile (the node's health check in the background): locked as main() locks it, written back after."""
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        slurm = load(path)
        yield slurm
        save(slurm, path)


def run_shell(slurm: Slurm, command: str, timeout: float = 120) -> Answer:
    """``command`` run by sh as the controller's shell runs it, the cluster the commands see being ``slurm``'s, and
    what they changed kept in ``slurm``. A command that is one of the stand-in's with plain words is answered here:
    sh would run exactly that argv, so no process is started for it."""
    argv = plain(command)
    if argv and argv[0] in COMMANDS:
        return slurm.run(argv)
    with served.serving(slurm) as socket_path:
        env = {**os.environ, "PATH": f"{_clients()}:{os.environ['PATH']}", served.SOCKET: socket_path}
        try:
            done = subprocess.run(["sh", "-c", command], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return Answer(124, "", "")
    return Answer(done.returncode, done.stdout, done.stderr)


def plain(command: str) -> list[str] | None:
    """The argv of ``command`` where sh gives it as is: what shlex.join writes for it (every word either of
    characters no shell treats specially or single-quoted), so no expansion, redirection or second command; else
    None."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    return argv if argv and shlex.join(argv) == command else None


def main() -> int:
    """One command of the stand-in's, on the state file of $SLURM_STANDIN_STATE (locked while it runs)."""
    name = Path(sys.argv[0]).name
    state = Path(os.environ[STATE])
    with open(f"{state}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        slurm = load(state)
        stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read() if name == "sbatch" else ""
        answer = slurm.run([name, *sys.argv[1:]], stdin=stdin, env=os.environ)
        save(slurm, state)
    sys.stdout.write(answer.out)
    sys.stderr.write(answer.err)
    return answer.rc
