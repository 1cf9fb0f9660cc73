"""Run Debian's real slurmctld (and, for accounting, slurmdbd + MariaDB) on a
directory of rendered config files, so tests can check what Slurm itself makes
of them (`scontrol show ...`).

Three runtimes: "22.05" is the Debian 12 host's own packages; "24.11" a Debian 13
root and "26.05" a Debian forky root, each built by build-debian-root.sh and
entered with chroot. Each command for
the chroot runs in its own private mount namespace (unshare), where /proc, /dev,
/sys, /etc/hosts and the scratch dir are mounted: the kernel drops those mounts
when the process exits, so nothing is ever left mounted on the host, not even
after a SIGKILLed test run.

Stdlib only; needs root (chroot, setpriv, chown to daemon users).

Typical use (the test renders the config with `overrides()` applied):

    rt = SlurmRuntime("24.11")
    with scratch_dir() as scratch:
        conf_dir = scratch / "etc"      # render here, with overrides(scratch, free_port())
        with running_slurmctld(rt, conf_dir, scratch) as ctld:
            nodes = parse_oneliner(ctld.scontrol("-o", "show", "node"))
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import ports

CACHE = Path(os.environ.get("CLUSTERFORGE_CACHE", "/var/cache/clusterforge"))
ROOT_MARKER = ".clusterforge-complete"  # written last by build-debian-root.sh
SCRATCH_BASE = Path(os.environ.get("CLUSTERFORGE_SCRATCH", "/tmp/clusterforge-realslurm"))
START_TIMEOUT = 30.0
# Throwaway MariaDB bound to 127.0.0.1 inside a scratch dir: a fixed password is fine.
STORAGE_USER = "slurm"
STORAGE_PASS = "clusterforge-test"

# The release each root holds: the Debian suite that ships it (build-debian-root.sh <suite>).
SUITES = {"24.11": "trixie", "26.05": "forky"}
VERSIONS = {"22.05": None, **{version: CACHE / f"{suite}-slurm" for version, suite in SUITES.items()}}
# The runtimes that run slurmd too (forky's root holds it; the host and the Debian 13 root have none, and installing
# it on the host would start it there).
SLURMD = {"26.05"}


class HarnessError(RuntimeError):
    """The harness could not do what was asked (setup problem, timeout)."""


class DaemonFailed(HarnessError):
    """A daemon exited or never answered; the message ends with its log tail."""


# --------------------------------------------------------------------------- runtime

# Runs in a fresh private mount namespace; the mounts die with the process.
_ENTER_ROOT = r"""
root=$1; etc=$2; devices=$3; shift 3
mount -t proc proc "$root/proc"
if [ "$devices" = - ]; then
    mount --rbind /dev "$root/dev"
else
    # slurmd stats every device file gres.conf names: a /dev of its own, the host's basic devices bound in, and
    # stand-ins with the NVIDIA driver's major number (195) that nothing opens. Gone with the namespace.
    mount -t tmpfs -o mode=0755 dev "$root/dev"
    for name in null zero full random urandom tty; do
        : > "$root/dev/$name"; mount --bind "/dev/$name" "$root/dev/$name"
    done
    mkdir "$root/dev/pts" "$root/dev/shm"
    mount --rbind /dev/pts "$root/dev/pts"; mount --rbind /dev/shm "$root/dev/shm"
    for name in $(echo "$devices" | tr , ' '); do mknod "$root$name" c 195 "${name##*[!0-9]}"; done
fi
mount --rbind /sys "$root/sys"
[ -e "$root/etc/hosts" ] || : > "$root/etc/hosts"
mount --bind /etc/hosts "$root/etc/hosts"   # slurmctld/munged resolve this host's name
while [ "$1" != -- ]; do mkdir -p "$root$1"; mount --bind "$1" "$root$1"; shift; done
shift
[ "$etc" = - ] || mount --bind "$etc" "$root/etc/slurm"
exec chroot "$root" "$@"
"""
# The host's own Slurm, with a scratch dir in place of /etc/slurm for this process alone (rendered files name paths
# there: the JWT key). Same private mount namespace as above, so the host's /etc/slurm is never touched.
_OWN_ETC = r"""
mount --bind "$1" /etc/slurm
shift
exec "$@"
"""

_mountpoints: set[tuple[Path, Path]] = set()  # (root, host path) dirs made inside roots


class SlurmRuntime:
    """One Slurm version: the host's binaries (root=None) or a chroot root."""

    def __init__(self, version: str, root: Path | None = None):
        if root is None and version not in VERSIONS:
            raise ValueError(f"unknown Slurm version {version!r}; known: {sorted(VERSIONS)}")
        self.version = version
        self.root = root if root is not None else VERSIONS[version]

    def __repr__(self) -> str:
        return f"SlurmRuntime({self.version!r}, root={self.root})"

    def available(self, accounting: bool = False, rest: bool = False) -> tuple[bool, str]:
        """(True, "") if this runtime can run here, else (False, why). `rest`:
        slurmrestd and the auth/jwt plugin too."""
        if os.geteuid() != 0:
            return False, "needs root (chroot, setpriv, chown to daemon users)"
        need = ["slurmctld", "scontrol", "munged", "setpriv", *(["slurmd"] if self.version in SLURMD else [])]
        if accounting:
            need += ["slurmdbd", "mariadbd", "mariadb-install-db", "mariadb", "mariadb-admin"]
        if rest:
            need += ["slurmrestd"]
            if not list(Path(self.root or "/").glob("usr/lib/*/slurm-wlm/auth_jwt.so")):
                return False, (f"no auth/jwt plugin in {self.root or 'host'} (slurm-wlm-jwt-plugin; see "
                               f"tests/realslurm/apt-packages.txt and build-debian-root.sh {SUITES.get(self.version)})")
        if self.root is not None:
            if not (self.root / ROOT_MARKER).is_file():
                return False, (f"no complete root at {self.root}; "
                               f"run tests/realslurm/build-debian-root.sh {SUITES.get(self.version)}")
            for tool in ("unshare", "chroot", "mount"):
                if shutil.which(tool) is None:
                    return False, f"host lacks {tool}"
        missing = [b for b in need if self._which(b) is None]
        if missing:
            where = self.root or "host"
            return False, f"missing in {where}: {', '.join(missing)} (see tests/realslurm/apt-packages.txt)"
        got = self.slurm_version()
        if not got.startswith(self.version + "."):
            return False, f"expected Slurm {self.version}.x, found {got!r}"
        return True, ""

    def _which(self, name: str) -> str | None:
        if self.root is None:
            return shutil.which(name, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        for d in ("usr/sbin", "usr/bin", "sbin", "bin"):
            # Debian's daemons are links into /etc/alternatives, absolute: read inside the root, not on the host.
            if (self.root / d / name).is_symlink() or (self.root / d / name).exists():
                return f"/{d}/{name}"
        return None

    def slurm_version(self) -> str:
        out = self.run(["slurmctld", "-V"], binds=(), check=False).stdout.strip()
        return out.split()[-1] if out else ""

    def argv(self, cmd: list[str], binds: tuple[Path, ...], etc: Path | None = None,
             devices: tuple[str, ...] = ()) -> list[str]:
        """The command line that runs `cmd` in this runtime, with `binds` visible
        at the same absolute paths (so config paths mean the same inside), and
        `etc` (a scratch dir) seen as /etc/slurm where given; `devices` (GPU
        device files, /dev/nvidiaN) exist as stand-ins, in a root only."""
        if devices and (self.root is None or any(not re.fullmatch(r"/dev/nvidia\d+", d) for d in devices)):
            raise HarnessError(f"stand-in devices are /dev/nvidiaN in a root only, not {devices} in {self}")
        if self.root is None:
            if etc is None:
                return list(cmd)
            return ["unshare", "--mount", "--propagation", "private", "--",
                    "sh", "-euc", _OWN_ETC, "sh", str(etc), *cmd]
        paths = _outermost(binds + ((etc,) if etc is not None else ()))
        for p in paths:
            _mountpoints.add((self.root, p))
        return ["unshare", "--mount", "--propagation", "private", "--",
                "sh", "-euc", _ENTER_ROOT, "sh", str(self.root), str(etc) if etc is not None else "-",
                ",".join(devices) or "-", *map(str, paths), "--", *cmd]

    def run(self, cmd: list[str], binds: tuple[Path, ...], *, env: dict | None = None,
            check: bool = True, timeout: float = 60, etc: Path | None = None) -> subprocess.CompletedProcess:
        try:
            res = subprocess.run(self.argv(cmd, binds, etc), env=env, capture_output=True,
                                 text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise HarnessError(f"[{self.version}] {' '.join(cmd)} timed out after {timeout} s") from e
        if check and res.returncode != 0:
            raise HarnessError(f"[{self.version}] {' '.join(cmd)} exited {res.returncode}:\n"
                               f"{res.stdout}{res.stderr}")
        return res

    def ids(self, user: str) -> tuple[int, int]:
        """uid/gid of `user` as this runtime sees it (trixie's munge is not the host's)."""
        passwd = Path(self.root or "/") / "etc/passwd"
        for line in passwd.read_text().splitlines():
            f = line.split(":")
            if f[0] == user:
                return int(f[2]), int(f[3])
        raise HarnessError(f"user {user!r} not in {passwd}")


def _outermost(paths: tuple[Path, ...]) -> list[Path]:
    resolved = sorted({Path(p).resolve() for p in paths}, key=lambda p: len(p.parts))
    out: list[Path] = []
    for p in resolved:
        if not any(p.is_relative_to(q) for q in out):
            out.append(p)
    return out


def _prune_mountpoints() -> None:
    # Empty dirs made inside a root as bind targets: drop those whose host
    # twin is gone (nobody can be binding a path that no longer exists).
    for root, path in list(_mountpoints):
        if path.exists():
            continue
        _mountpoints.discard((root, path))
        p = path
        while p != p.parent and not p.exists():
            with contextlib.suppress(OSError):
                (root / p.relative_to("/")).rmdir()
            p = p.parent


# --------------------------------------------------------------------------- helpers

def free_port() -> int:
    """A TCP port nobody listens on right now, outside the ephemeral range (tests/ports.py says why)."""
    return ports.free_port("")


@contextlib.contextmanager
def scratch_dir() -> Iterator[Path]:
    """A fresh dir the slurm/munge/mysql users can reach (pytest's tmp_path is
    0700 root, which they cannot traverse); removed afterwards."""
    SCRATCH_BASE.mkdir(mode=0o755, parents=True, exist_ok=True)
    for old in SCRATCH_BASE.iterdir():  # left by a killed run (its daemons died with it)
        pid = old.name.split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(old, ignore_errors=True)
            _mountpoints.update((root, old) for root in VERSIONS.values() if root)
    path = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=SCRATCH_BASE))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        _prune_mountpoints()


def overrides(scratch: Path, port: int, *, dbd_port: int | None = None) -> dict[str, str]:
    """slurm.conf keys a test must pass to the renderer so slurmctld runs from
    `scratch`, on `port`, against the harness's own munged. With `dbd_port`, also
    point accounting at the slurmdbd from running_slurmdbd()."""
    d = Path(scratch) / "slurmctld"
    keys = {
        # slurmctld only starts on the host named here; clients connect to the
        # address in parentheses, whatever the name resolves to.
        "SlurmctldHost": f"{socket.gethostname().split('.')[0]}(127.0.0.1)",
        "SlurmctldPort": str(port),
        "StateSaveLocation": str(d / "state"),
        "SlurmctldPidFile": str(d / "slurmctld.pid"),
        "SlurmctldLogFile": str(d / "slurmctld.log"),
        "AuthInfo": f"socket={munge_socket(scratch)}",
    }
    slurmd = Path(scratch) / "slurmd"
    keys |= {  # for running_slurmd
        "SlurmdPort": str(free_port()),
        "SlurmdSpoolDir": str(slurmd / "spool"),
        "SlurmdPidFile": str(slurmd / "slurmd.pid"),
        "SlurmdLogFile": str(slurmd / "slurmd.log"),
    }
    if dbd_port is not None:
        keys |= {
            "AccountingStorageHost": "localhost",
            "AccountingStoragePort": str(dbd_port),
            # slurmctld authenticates to slurmdbd through this munge socket, not AuthInfo's.
            "AccountingStoragePass": str(munge_socket(scratch)),
        }
    return keys


def bare_etc(scratch: Path, cluster: str, lines: str, keys: Mapping[str, str] | None = None) -> Path:
    """``etc/`` under ``scratch`` with a bare slurm.conf, for tests of commands on nodes and jobs rather than of a
    rendered config: ``cluster``'s name, munge, cons_tres, no task or MPI plugin, the overrides that run slurmctld
    from ``scratch`` with ``keys`` over them (each key written once: slurmd logs a key given twice as an error), then
    ``lines`` (more keys, the nodes, the partitions); and a cgroup.conf for a slurmd."""
    etc = scratch / "etc"
    etc.mkdir(mode=0o755)
    keys = overrides(scratch, free_port()) | dict(keys or {})
    (etc / "slurm.conf").write_text(
        f"ClusterName={cluster}\nSlurmUser=slurm\nAuthType=auth/munge\nSelectType=select/cons_tres\n"
        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\n"
        + "".join(f"{k}={v}\n" for k, v in keys.items()) + lines)
    (etc / "cgroup.conf").write_text("CgroupPlugin=autodetect\n")
    return etc


def side_by_side_etc(scratch: Path, cluster: str, nodes: Mapping[str, str], lines: str = "",
                     keys: Mapping[str, str] | None = None) -> Path:
    """bare_etc() for a slurmd per node on this machine (running_slurmds): ``keys`` and side_by_side()'s over the
    overrides, a NodeName line per node of ``nodes`` (each name with the rest of its line, ``CPUs=2 RealMemory=100``)
    at its own address and port, then ``lines`` (the partitions)."""
    own, addresses = side_by_side(scratch, list(nodes))
    return bare_etc(scratch, cluster, "".join(f"NodeName={node} {addresses[node]} {rest} State=UNKNOWN\n"
                                              for node, rest in nodes.items()) + lines, dict(keys or {}) | own)


def side_by_side(scratch: Path, nodes: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """For several slurmd on this machine (running_slurmd each): slurm.conf keys that give each its own spool dir,
    pid file and log file under scratch/slurmd/<node> (slurmd puts its node's name for %n; a slurmd signals the
    process its pid file names, another node's where they share one), and each node's NodeAddr and Port, its own
    (127.0.3.N and a free port: slurmd listens on every address at its node's Port)."""
    d = Path(scratch) / "slurmd" / "%n"
    keys = {"SlurmdSpoolDir": str(d / "spool"), "SlurmdPidFile": str(d / "slurmd.pid"),
            "SlurmdLogFile": str(d / "slurmd.log")}
    return keys, {node: f"NodeAddr=127.0.3.{i + 1} Port={free_port()}" for i, node in enumerate(nodes)}


def slurmdbd_overrides(scratch: Path, dbd_port: int, storage_port: int) -> dict[str, str]:
    """slurmdbd.conf keys a test must pass to the renderer for running_slurmdbd()."""
    d = Path(scratch) / "slurmdbd"
    return {
        "DbdHost": "localhost",  # slurmdbd only starts on the host named here
        "DbdPort": str(dbd_port),
        "PidFile": str(d / "slurmdbd.pid"),
        "LogFile": str(d / "slurmdbd.log"),
        "AuthInfo": f"socket={munge_socket(scratch)}",
        # TCP, not "localhost": that would make the client use the system socket.
        "StorageHost": "127.0.0.1",
        "StoragePort": str(storage_port),
        "StorageUser": STORAGE_USER,
        "StoragePass": STORAGE_PASS,
    }


def munge_socket(scratch: Path) -> Path:
    return Path(scratch) / "munge" / "munge.socket"


def read_conf(path: Path) -> dict[str, str]:
    """Single-key lines of a Slurm-style config, keys lower-cased (Slurm ignores
    case). Node/partition lines are skipped; enough to find paths and ports."""
    keys: dict[str, str] = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.fullmatch(r"(\w+)\s*=\s*(\S*)", line)
        if m:
            keys[m[1].lower()] = m[2]
    return keys


def _make_dir(path: Path, uid: int, gid: int, mode: int = 0o755) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, uid, gid)
    path.chmod(mode)


def _check_reachable(path: Path) -> None:
    for p in [path, *path.parents]:
        if not p.stat().st_mode & 0o001:
            raise HarnessError(f"{p} is not traversable by other users, so the slurm and "
                               f"munge users cannot reach {path}; use harness.scratch_dir()")


def _inside(path: str, scratch: Path, what: str) -> Path:
    p = Path(path)
    if not p.is_absolute() or not p.resolve().is_relative_to(scratch.resolve()):
        raise HarnessError(f"{what}={path} is outside the scratch dir {scratch}; "
                           "render the config with harness.overrides()/slurmdbd_overrides()")
    return p


# --------------------------------------------------------------------------- daemons

class _Daemon:
    """A foreground daemon in its own session, so its helpers (slurmctld's
    slurmscriptd) die with it; stdout+stderr go to a file."""

    def __init__(self, runtime: SlurmRuntime, name: str, cmd: list[str], binds: tuple[Path, ...],
                 out: Path, log: Path | None = None, env: dict | None = None, etc: Path | None = None,
                 devices: tuple[str, ...] = ()):
        self.runtime, self.name, self.out, self.logfile = runtime, name, out, log
        with open(out, "ab") as f:
            self.proc = subprocess.Popen(runtime.argv(cmd, binds, etc, devices), stdin=subprocess.DEVNULL,
                                         stdout=f, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
        # If this Python process dies without cleaning up (SIGKILL, CI timeout),
        # the watchdog reads EOF and kills the daemon's whole session.
        self._watchdog = subprocess.Popen(
            ["sh", "-c", 'read -r _ || kill -KILL "-$1" 2>/dev/null', "sh", str(self.proc.pid)],
            stdin=subprocess.PIPE, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        parts = []
        for p in (self.logfile, self.out):
            if p is not None and p.exists():
                parts.append(p.read_text(errors="replace"))
        return "\n".join(parts)

    def tail(self, n: int = 40) -> str:
        text = self.out.read_text(errors="replace") if self.out.exists() else ""
        if self.logfile is not None and self.logfile.exists():
            # -D also copies the log to stderr, but not before the log file opens
            # (parse errors), so prefer stderr and fall back to the log file.
            text = text or self.logfile.read_text(errors="replace")
        return "\n".join(text.splitlines()[-n:])

    def failed(self, why: str) -> DaemonFailed:
        return DaemonFailed(f"[{self.runtime.version}] {self.name} {why}; last log lines:\n{self.tail()}")

    def wait_until(self, ready, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                raise self.failed(f"exited with status {self.proc.returncode} before it was ready")
            with contextlib.suppress(HarnessError):  # a hung probe means "not yet"
                if ready():
                    return
            if time.monotonic() > deadline:
                raise self.failed(f"not ready after {timeout:.0f} s")
            time.sleep(0.2)

    def stop(self, timeout: float = 15) -> None:
        pid = self.proc.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # leftovers in the session (or a hung leader)
        self.proc.wait(timeout)
        self._watchdog.kill()
        self._watchdog.wait()
        self._watchdog.stdin.close()


def _tcp_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# In-process refcount: slurmctld and slurmdbd in the same scratch share one munged.
_munged: dict[Path, list] = {}


@contextlib.contextmanager
def running_munged(runtime: SlurmRuntime, scratch: Path, timeout: float = START_TIMEOUT) -> Iterator[Path]:
    """A private munged (own random key, socket in scratch); yields the socket."""
    scratch = Path(scratch)
    sock = munge_socket(scratch)
    if sock in _munged:
        _munged[sock][0] += 1
        try:
            yield sock
        finally:
            _munged[sock][0] -= 1
        return
    _check_reachable(scratch)
    d = sock.parent
    uid, gid = runtime.ids("munge")
    _make_dir(d, uid, gid)  # munged refuses a socket dir writable by others
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chown(key, uid, gid)
    key.chmod(0o400)
    daemon = _Daemon(runtime, "munged", [
        "setpriv", "--reuid=munge", "--regid=munge", "--init-groups",
        "munged", "--foreground", f"--socket={sock}", f"--key-file={key}",
        f"--pid-file={d / 'munged.pid'}", f"--seed-file={d / 'munged.seed'}",
    ], (scratch,), out=scratch / "munged.out")  # in the foreground it logs to stderr
    _munged[sock] = [1, daemon]
    try:
        daemon.wait_until(sock.exists, timeout)
        yield sock
    finally:
        _munged[sock][0] -= 1
        if _munged[sock][0] == 0:
            del _munged[sock]
            daemon.stop()
            shutil.rmtree(d, ignore_errors=True)
            (scratch / "munged.out").unlink(missing_ok=True)
            _prune_mountpoints()


class Slurmctld:
    """Handle on a running slurmctld; commands run in the same runtime."""

    def __init__(self, runtime: SlurmRuntime, conf: Path, binds: tuple[Path, ...], daemon: _Daemon):
        self.runtime, self.conf, self._binds, self._daemon = runtime, conf, binds, daemon
        self.env = {**os.environ, "SLURM_CONF": str(conf)}

    def run(self, *cmd: str, check: bool = True, timeout: float = 30,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """``cmd`` as a client of this slurmctld; ``env`` added to its environment (sbatch and srun hand theirs to
        the job)."""
        return self.runtime.run(list(cmd), self._binds, env={**self.env, **(env or {})}, check=check,
                                timeout=timeout)

    def scontrol(self, *args: str) -> str:
        return self.run("scontrol", *args).stdout

    def ping(self) -> bool:
        # A slurmctld still waiting for slurmdbd accepts the connection but never
        # answers, so a hung probe just means "not up yet".
        try:
            return "is UP" in self.run("scontrol", "-o", "ping", check=False, timeout=5).stdout
        except HarnessError:
            return False

    def log(self) -> str:
        return self._daemon.log()

    def errors(self) -> list[str]:
        """error/warning/fatal lines slurmctld printed, minus BENIGN_ERRORS: what
        it disliked in the config files without refusing to start (e.g. a bad
        gres.conf key or an unknown node in topology.conf)."""
        return [line for line in self._daemon.out.read_text(errors="replace").splitlines()
                if re.search(r"\b(error|warning|fatal):", line)
                and not any(re.search(b, line) for b in BENIGN_ERRORS)]


# Noise of a fresh controller on a test box, not about the config under test.
BENIGN_ERRORS = (
    r"state file", r"NOTE: Trying backup", r"No fed_mgr state",  # empty StateSaveLocation
    r"Configured MailProg is invalid",  # no mail(1) installed
    r"pmix|MPI: Cannot create context",  # 22.05 loads mpi/pmix without the PMIx library
    r"High latency for 1000 calls to gettimeofday",  # slurmctld timing its clock on a busy shared machine
)


@contextlib.contextmanager
def running_slurmctld(runtime: SlurmRuntime, conf_dir: Path, scratch: Path,
                      timeout: float = START_TIMEOUT, own_etc: bool = False) -> Iterator[Slurmctld]:
    """`slurmctld -D -f conf_dir/slurm.conf` (it reads gres.conf, topology.conf,
    cgroup.conf next to it) with a private munged. Raises DaemonFailed, with the
    log tail, if slurmctld exits or does not answer `scontrol ping` in time.
    `own_etc`: slurmctld sees conf_dir as /etc/slurm (in its own mount namespace),
    for what the rendered files name there (the JWT key)."""
    conf_dir, scratch = Path(conf_dir), Path(scratch)
    conf = conf_dir / "slurm.conf"
    keys = read_conf(conf)
    state = _inside(keys.get("statesavelocation", "/var/spool/slurmctld"), scratch, "StateSaveLocation")
    logfile = _inside(keys.get("slurmctldlogfile", "(unset)"), scratch, "SlurmctldLogFile")
    pidfile = _inside(keys.get("slurmctldpidfile", "/run/slurmctld.pid"), scratch, "SlurmctldPidFile")
    _check_reachable(conf_dir)
    # slurmctld starts as root and drops to SlurmUser; state/log/pid must be its.
    uid, gid = runtime.ids(keys.get("slurmuser", "root"))
    made = [p for p in {state, logfile.parent, pidfile.parent} if not p.exists()]
    for p in (state, logfile.parent, pidfile.parent):
        _make_dir(p, uid, gid)
    binds = (scratch, conf_dir)
    try:
        with running_munged(runtime, scratch, timeout):
            daemon = _Daemon(runtime, "slurmctld", ["slurmctld", "-D", "-f", str(conf)], binds,
                             out=scratch / "slurmctld.out", log=logfile, etc=conf_dir if own_etc else None)
            ctld = Slurmctld(runtime, conf, binds, daemon)
            try:
                daemon.wait_until(ctld.ping, timeout)
                yield ctld
            finally:
                daemon.stop()
    finally:
        for p in sorted(made, key=lambda p: len(p.parts)):
            shutil.rmtree(p, ignore_errors=True)
        (scratch / "slurmctld.out").unlink(missing_ok=True)
        _prune_mountpoints()


class Slurmd:
    """A slurmd that registered: the node as slurmctld showed it then, and what slurmd logged."""

    def __init__(self, node: dict[str, str], daemon: _Daemon):
        self.node, self._daemon = node, daemon

    def errors(self) -> list[str]:
        return [line for line in self._daemon.out.read_text(errors="replace").splitlines()
                if re.search(r"\b(error|warning|fatal):", line)]


@contextlib.contextmanager
def running_slurmd(ctld: Slurmctld, node: str, devices: tuple[str, ...] = (),
                   timeout: float = START_TIMEOUT, binds: tuple[Path, ...] = (),
                   args: tuple[str, ...] = ()) -> Iterator[Slurmd]:
    """`slurmd -D -N node` on the files of a running slurmctld, as root like Debian's unit, with stand-ins for the
    GPU device files its gres.conf names (`devices`, a root only); yields it once slurmctld shows the node registered
    (its Version set). This machine is not the node's hardware: slurmctld may drain it for that (fewer
    CPUs or memory than the inventory's), which is its verdict on the machine, not on the files. Raises DaemonFailed
    if slurmd exits (a file it rejects) or never registers. `binds`: host paths its jobs see as well (the scratch
    dir and the config's they see anyway). Several run side by side on the keys of side_by_side(). `args`: more of
    slurmd's options (``-b``: its boot time is its start, slurmd.c's, so a slurmd started again after slurmctld issued
    the node's reboot is the node booted: slurmctld waits for a boot time past its request, waiting_for_node_boot)."""
    keys = read_conf(ctld.conf)
    scratch = Path(ctld._binds[0])  # running_slurmctld's binds: (scratch, conf_dir)
    own = {key: keys[key].replace("%n", node) for key in ("slurmdspooldir", "slurmdlogfile") if key in keys}
    spool = _inside(own.get("slurmdspooldir", "/var/lib/slurm/slurmd"), scratch, "SlurmdSpoolDir")
    logfile = _inside(own.get("slurmdlogfile", "(unset)"), scratch, "SlurmdLogFile")
    for p in (spool, logfile.parent):
        _make_dir(p, 0, 0)
    out = scratch / f"slurmd-{node}.out"
    daemon = _Daemon(ctld.runtime, "slurmd", ["slurmd", "-D", "-N", node, "-f", str(ctld.conf), *args],
                     ctld._binds + tuple(binds), out=out, log=logfile, env=ctld.env, devices=devices)
    shown: dict[str, str] = {}

    def registered() -> bool:
        records = parse_oneliner(ctld.scontrol("-o", "show", "node", node))
        shown.update(records[0] if records else {})
        return shown.get("Version", "N/A") not in ("N/A", "(null)", "")
    try:
        daemon.wait_until(registered, timeout)
        yield Slurmd(dict(shown), daemon)
    finally:
        daemon.stop()
        shutil.rmtree(spool, ignore_errors=True)
        logfile.unlink(missing_ok=True)
        out.unlink(missing_ok=True)


@contextlib.contextmanager
def running_slurmds(ctld: Slurmctld, nodes: list[str], devices: tuple[str, ...] = (),
                    binds: tuple[Path, ...] = ()) -> Iterator[list[Slurmd]]:
    """running_slurmd for each of ``nodes``, one after another (each registered before the next starts), on a
    slurm.conf written with side_by_side()'s keys and node addresses; all stopped on the way out."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(running_slurmd(ctld, node, devices, binds=binds)) for node in nodes]


# --------------------------------------------------------------------------- accounting

@contextlib.contextmanager
def _running_mariadb(runtime: SlurmRuntime, scratch: Path, port: int, user: str, password: str,
                     database: str, timeout: float) -> Iterator[None]:
    d = scratch / "mariadb"
    uid, gid = runtime.ids("mysql")
    _make_dir(d, uid, gid)
    data, sock = d / "data", d / "mariadb.sock"
    binds = (scratch,)
    try:
        runtime.run(["mariadb-install-db", "--no-defaults", "--user=mysql", f"--datadir={data}",
                     "--auth-root-authentication-method=socket", "--skip-test-db"],
                    binds, timeout=120)
        daemon = _Daemon(runtime, "mariadbd", [
            "mariadbd", "--no-defaults", "--user=mysql", f"--datadir={data}", f"--socket={sock}",
            f"--port={port}", "--bind-address=127.0.0.1", f"--pid-file={d / 'mariadbd.pid'}",
            # Small for tests; slurmdbd logs "Database settings not recommended
            # values: innodb_buffer_pool_size", which is only a warning.
            "--skip-name-resolve", "--innodb-buffer-pool-size=128M",
            "--innodb-lock-wait-timeout=900", "--max-allowed-packet=16M",
        ], binds, out=d / "mariadbd.out")
        try:
            daemon.wait_until(lambda: runtime.run(
                ["mariadb-admin", f"--socket={sock}", "ping"], binds, check=False, timeout=10
            ).returncode == 0, timeout)
            # root logs in through the socket as the OS root (unix_socket auth). The database is made here, as the
            # deploy makes it: slurmdbd 24.11 creating it itself reconnects on the handle its first connect failed
            # on, which MariaDB 11.8.9's client library then refuses every result of ("Number of columns in result
            # (=1) set execeeds maxmimum allowed number of columns (=0)"), and slurmdbd exits.
            sql = (f"CREATE DATABASE IF NOT EXISTS `{database}`; "
                   f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'; "
                   f"GRANT ALL ON `{database}`.* TO '{user}'@'%';")
            runtime.run(["mariadb", f"--socket={sock}", "-e", sql], binds)
            yield
        finally:
            daemon.stop(timeout=30)
    finally:
        shutil.rmtree(d, ignore_errors=True)


class Slurmdbd:
    """Handle on a running slurmdbd. sacctmgr() reads the slurm.conf next to
    slurmdbd.conf (it needs AccountingStorageHost/Port/Pass from there)."""

    def __init__(self, runtime: SlurmRuntime, binds: tuple[Path, ...], env: dict, daemon: _Daemon):
        self.runtime, self._binds, self.env, self._daemon = runtime, binds, env, daemon

    def sacctmgr(self, *args: str) -> str:
        """`sacctmgr -i ...`, e.g. ("add", "qos", "high"): a partition QOS=
        naming a QOS the database lacks is fatal for slurmctld 22.05 and 24.11."""
        return self.runtime.run(["sacctmgr", "-i", *args], self._binds, env=self.env).stdout

    def log(self) -> str:
        return self._daemon.log()


@contextlib.contextmanager
def running_slurmdbd(runtime: SlurmRuntime, conf: Path, scratch: Path,
                     timeout: float = 90, own_etc: bool = False) -> Iterator[Slurmdbd]:
    """A real MariaDB (scratch datadir, 127.0.0.1:StoragePort) and `slurmdbd -D`
    reading `conf` (must be named slurmdbd.conf), sharing running_slurmctld()'s
    munged. Start it first: with AccountingStorageType=accounting_storage/slurmdbd
    and empty state, slurmctld 22.05 exits ("no TRES") and 24.11 blocks forever
    ("Retrying initial connection to slurmdbd") without it.
    Sets conf to 0600 owned by SlurmUser, which slurmdbd insists on. `own_etc`:
    slurmdbd sees conf's directory as /etc/slurm, as running_slurmctld's."""
    conf, scratch = Path(conf), Path(scratch)
    if conf.name != "slurmdbd.conf":
        raise HarnessError(f"{conf}: slurmdbd only reads a file named slurmdbd.conf")
    keys = read_conf(conf)
    if keys.get("storagehost") != "127.0.0.1" or "storageport" not in keys:
        raise HarnessError(f"{conf}: StorageHost=127.0.0.1 and StoragePort are required; "
                           "render with harness.slurmdbd_overrides()")
    logfile = _inside(keys.get("logfile", "(unset)"), scratch, "LogFile")
    pidfile = _inside(keys.get("pidfile", "/run/slurmdbd.pid"), scratch, "PidFile")
    _check_reachable(conf.parent)
    uid, gid = runtime.ids(keys.get("slurmuser", "root"))
    os.chown(conf, uid, gid)
    conf.chmod(0o600)
    made = [p for p in {logfile.parent, pidfile.parent} if not p.exists()]
    for p in (logfile.parent, pidfile.parent):
        _make_dir(p, uid, gid)
    dbd_port = int(keys.get("dbdport", "6819"))
    binds = (scratch, conf.parent)
    # slurmdbd has no -f: it reads slurmdbd.conf next to $SLURM_CONF.
    env = {**os.environ, "SLURM_CONF": str(conf.parent / "slurm.conf")}
    try:
        with running_munged(runtime, scratch, timeout), _running_mariadb(
                runtime, scratch, int(keys["storageport"]), keys.get("storageuser", STORAGE_USER),
                keys.get("storagepass", ""), keys.get("storageloc", "slurm_acct_db"), timeout):
            daemon = _Daemon(runtime, "slurmdbd", ["slurmdbd", "-D"], binds,
                             out=scratch / "slurmdbd.out", log=logfile, env=env,
                             etc=conf.parent if own_etc else None)
            try:
                daemon.wait_until(lambda: _tcp_open(dbd_port), timeout)
                yield Slurmdbd(runtime, binds, env, daemon)
            finally:
                daemon.stop()
    finally:
        for p in made:
            shutil.rmtree(p, ignore_errors=True)
        (scratch / "slurmdbd.out").unlink(missing_ok=True)
        _prune_mountpoints()


# --------------------------------------------------------------------------- slurmrestd

def unit_command(dropin: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment a systemd drop-in gives its service: the
    last ExecStart= (an empty one only resets the unit's), every Environment=."""
    starts = [line.split("=", 1)[1] for line in dropin.splitlines() if line.startswith("ExecStart=")]
    env = dict(line.split("=", 1)[1].split("=", 1) for line in dropin.splitlines()
               if line.startswith("Environment="))
    if not starts or not starts[-1]:
        raise HarnessError("the drop-in gives no ExecStart= command")
    return starts[-1].split(), env


class Slurmrestd:
    """Handle on a running slurmrestd: HTTP requests to it, on loopback."""

    def __init__(self, port: int, daemon: _Daemon):
        self.port, self._daemon = port, daemon

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        """(HTTP status, body) of GET path; an error status is an answer too."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def log(self) -> str:
        return self._daemon.log()


@contextlib.contextmanager
def running_slurmrestd(runtime: SlurmRuntime, etc: Path, scratch: Path, command: list[str],
                       env: dict[str, str], port: int, user: str = "nobody",
                       timeout: float = START_TIMEOUT) -> Iterator[Slurmrestd]:
    """slurmrestd run as `command` (listening on 127.0.0.1:`port`) with `env`, as
    `user` (it refuses root; the deploy's own user does not exist here), seeing
    `etc` as /etc/slurm, where it reads slurm.conf: as on a deployed host."""
    scratch = Path(scratch)
    binds = (scratch, Path(etc))
    cmd = ["setpriv", f"--reuid={user}", f"--regid={runtime.ids(user)[1]}", "--clear-groups", *command]
    daemon = _Daemon(runtime, "slurmrestd", cmd, binds, out=scratch / "slurmrestd.out",
                     env={**os.environ, **env}, etc=Path(etc))
    try:
        daemon.wait_until(lambda: _tcp_open(port), timeout)
        yield Slurmrestd(port, daemon)
    finally:
        daemon.stop()
        (scratch / "slurmrestd.out").unlink(missing_ok=True)
        _prune_mountpoints()


# --------------------------------------------------------------------------- parsers

# A key starts a token (after whitespace) and is CamelCase; values may hold
# spaces (OS=Linux 6.1.0 #1 SMP ..., Reason=Not responding [slurm@...]) and '='
# (CfgTRES=cpu=4,mem=1000M), but never " Word=".
_KEY = re.compile(r"(?:^|(?<=\s))([A-Z][A-Za-z0-9_]*)=")


@contextlib.contextmanager
def topology_slurmctld(runtime: SlurmRuntime, nodes: list[str], plugin: str, topology: str,
                       extra: str = "") -> Iterator[Slurmctld]:
    """slurmctld on ``topology`` as topology.conf, with a bare slurm.conf around it: ``nodes`` on loopback
    addresses, one partition, ``plugin`` as TopologyPlugin, and the lines ``extra``. For tests of topology.conf
    alone, or of commands on nodes; raises DaemonFailed where slurmctld refuses it."""
    with scratch_dir() as scratch:
        names = ",".join(nodes)
        addresses = ",".join(f"127.2.{i // 250}.{i % 250 + 1}" for i in range(len(nodes)))
        etc = bare_etc(scratch, "topology", f"TopologyPlugin={plugin}\n"
                       f"NodeName={names} NodeAddr={addresses} CPUs=4 RealMemory=1000 State=UNKNOWN\n"
                       f"PartitionName=all Nodes={names} Default=YES State=UP\n" + extra)
        (etc / "topology.conf").write_text(topology)
        with running_slurmctld(runtime, etc, scratch) as ctld:
            yield ctld


def parse_record(line: str) -> dict[str, str]:
    """One `Key=value Key2=value two ...` record."""
    matches = list(_KEY.finditer(line))
    rec: dict[str, str] = {}
    for m, nxt in zip(matches, matches[1:] + [None]):
        end = nxt.start() if nxt else len(line)
        rec[m[1]] = line[m.end():end].strip()
    return rec


def parse_oneliner(text: str) -> list[dict[str, str]]:
    """`scontrol -o show node|partition|...` output: one record per line."""
    return [parse_record(line) for line in text.splitlines() if line.strip()]


def parse_topology(text: str) -> dict[str, dict[str, str]]:
    """`scontrol show topology`, keyed by switch/block name. topology/tree prints
    the same in 22.05 and 24.11, one line per switch:
        SwitchName=leaf01 Level=0 LinkSpeed=1 Nodes=n[1-8]
        SwitchName=spine01 Level=1 LinkSpeed=1 Nodes=n[1-16] Switches=leaf[01-02]
    (Nodes of an upper switch = all nodes below it; Switches only when it has any).
    topology/block (24.11):
        BlockName=b1 BlockIndex=0 Nodes=n1 BlockSize=1
        AggregatedBlock=b[1-2] BlockIndex=2 Nodes=n[1-2] BlockSize=2"""
    out: dict[str, dict[str, str]] = {}
    for rec in parse_oneliner(text):
        name = rec.get("SwitchName") or rec.get("BlockName") or rec.get("AggregatedBlock")
        if name:
            out[name] = rec
    return out


def require(version: str, accounting: bool = False, rest: bool = False) -> SlurmRuntime:
    """The runtime of ``version``, or the test skipped saying why it cannot run here (failed instead under
    CLUSTERFORGE_REQUIRE_REALSLURM=1, which scripts/test.sh sets)."""
    from needs import skip_or_fail  # tests/, on pytest's path

    runtime = SlurmRuntime(version)
    ok, why = runtime.available(accounting=accounting, rest=rest)
    if not ok:
        skip_or_fail(f"Slurm {version} cannot run here: {why}")
    return runtime
