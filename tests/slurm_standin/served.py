"""The stand-in's commands served from the test's own process while a shell text runs (shell.run_shell): each command
a small client (the system's python3 in isolated mode, no site: a few milliseconds) that sends its argv and standard
input over a Unix socket to a thread answering with the test's ``Slurm``, and prints what it is told. No state is
copied in or out: the commands act on the one object, one at a time. A failure of the stand-in's own (a command it
does not know) is raised in the test once the shell has ended, not lost in the shell's stderr."""

from __future__ import annotations

import contextlib
import json
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .slurm import Slurm

SOCKET = "SLURM_STANDIN_SOCKET"
READ = ("SLURM_TIME_FORMAT",)   # what of a command's environment the stand-in reads (Slurm.run)
CLIENT = f"""#!/usr/bin/python3 -IS
import json, os, socket, sys
name = os.path.basename(sys.argv[0])
stdin = sys.stdin.read() if name == "sbatch" and sys.stdin is not None and not sys.stdin.isatty() else ""
with socket.socket(socket.AF_UNIX) as s:
    s.connect(os.environ[{SOCKET!r}])
    env = {{k: v for k, v in os.environ.items() if k in {READ!r}}}
    s.sendall(json.dumps({{"argv": [name, *sys.argv[1:]], "stdin": stdin, "env": env}}).encode())
    s.shutdown(socket.SHUT_WR)
    reply = json.loads(b"".join(iter(lambda: s.recv(1 << 16), b"")))
sys.stdout.write(reply["out"])
sys.stderr.write(reply["err"])
sys.exit(reply["rc"])
"""


def client_dir(directory: Path, commands: tuple[str, ...]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in commands:
        (directory / name).write_text(CLIENT)
        (directory / name).chmod(0o755)
    return directory


@contextlib.contextmanager
def serving(slurm: Slurm) -> Iterator[str]:
    """A socket answering the commands with ``slurm`` while the block runs; its path."""
    failures: list[BaseException] = []
    with tempfile.TemporaryDirectory(prefix="slurm-standin-") as scratch, socket.socket(socket.AF_UNIX) as server:
        path = str(Path(scratch) / "socket")
        server.bind(path)
        server.listen(8)
        stop = threading.Event()

        def answer(connection: socket.socket) -> None:
            with connection:
                request = json.loads(b"".join(iter(lambda: connection.recv(1 << 16), b"")))
                try:
                    done = slurm.run(request["argv"], stdin=request["stdin"], env=request["env"])
                    reply = {"rc": done.rc, "out": done.out, "err": done.err}
                except Exception as error:  # noqa: BLE001 - the test's, raised once the shell has ended
                    failures.append(error)
                    reply = {"rc": 2, "out": "", "err": f"slurm stand-in: {error}\n"}
                connection.sendall(json.dumps(reply).encode())

        def loop() -> None:
            while True:
                connection, _ = server.accept()
                if stop.is_set():   # the wake-up of the block's end
                    connection.close()
                    return
                answer(connection)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield path
        finally:
            stop.set()
            with socket.socket(socket.AF_UNIX) as wake:
                wake.connect(path)
            thread.join()
    if failures:
        raise failures[0]
