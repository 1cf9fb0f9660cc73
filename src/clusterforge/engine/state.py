"""What the deploy needs to know about a host, read in one remote command before anything changes.

The roles decide from this state alone: a host that is already what the inventory says gets no further command.
It holds, for the paths, units, packages and accounts the deploy manages on the host: each file's SHA-256, owner and
mode (and the text of the few files a decision reads: the Slurm files, /etc/hosts, the applied records), each
unit's state, each package's installed version, the daemon users and groups (from getent: never /etc/shadow),
and whether the host is a container.
"""

from __future__ import annotations

import base64
import io
import shlex
import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import gevent
from pyinfra.api import FactBase
from pyinfra.api.facts import get_fact
from pyinfra.context import ctx_host

from ..slurm import controller
from .footprint import Footprint
from .remote import refuse_sudo_password

if TYPE_CHECKING:
    from pyinfra.api import Host as PyinfraHost
    from pyinfra.api import State as PyinfraState

# Where a host keeps what each daemon last applied (engine/ops.py; one directory: the host state reads it whole).
APPLIED_DIR = "/var/lib/clusterforge/applied"


@dataclass(frozen=True, slots=True)
class Stat:
    kind: str  # "file" or "dir"; for a path in a person's control (Footprint.owned) also "link" or "other"
    # The owner's and group's names; for a path in a person's control their numeric ids, as text: a host that does
    # not know the person yet (a new host on a shared /home, before the deploy makes them) has no name for them.
    sha256: str | None
    user: str
    group: str
    mode: str  # octal, as stat prints it: "644", "600", "2755"


@dataclass(frozen=True, slots=True)
class Unit:
    active: bool
    enabled: bool
    known: bool
    replaced: bool = False  # it runs an executable a package has replaced since it started


@dataclass(frozen=True, slots=True)
class Account:
    name: str
    id: int


@dataclass(frozen=True, slots=True)
class Passwd:
    """A user's passwd entry as getent gives it: ids, home and shell."""

    uid: int
    gid: int
    home: str
    shell: str


@dataclass
class State:
    paths: dict[str, Stat] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    units: dict[str, Unit] = field(default_factory=dict)
    packages: dict[str, str] = field(default_factory=dict)  # installed name -> version
    held: set[str] = field(default_factory=set)  # installed packages on hold (dpkg's selection)
    users: list[Account] = field(default_factory=list)
    groups: list[Account] = field(default_factory=list)
    passwd: dict[str, Passwd] = field(default_factory=dict)  # user name -> its entry, for the users read
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)  # group name -> its members (not primary)
    expires: dict[str, str] = field(default_factory=dict)  # user name -> shadow's expiry day ("1": locked), "" none
    container: bool = False
    slurmctld: str = ""  # the release slurmctld runs, as it says; asked only by a host whose Slurm moves
    os: tuple[str, str] = ("", "")  # /etc/os-release ID and VERSION_ID, e.g. ("ubuntu", "24.04")
    arch: str = ""                  # dpkg's architecture, e.g. "amd64"

    def unit(self, name: str) -> Unit:
        return self.units.get(name if "." in name else f"{name}.service", Unit(False, False, False))

    def user_id(self, name: str) -> int | None:
        return next((a.id for a in self.users if a.name == name), None)

    def group_id(self, name: str) -> int | None:
        return next((a.id for a in self.groups if a.name == name), None)

    def user_named(self, uid: int) -> str | None:
        return next((a.name for a in self.users if a.id == uid), None)

    def group_named(self, gid: int) -> str | None:
        return next((a.name for a in self.groups if a.id == gid), None)


def _words(items: Iterable[str]) -> str:
    return " ".join(shlex.quote(i) for i in items)


def _entries(directories: Iterable[str]) -> str:
    """Each directory's entries, as the host's shell expands them."""
    return " ".join(f"{shlex.quote(d)}/*" for d in directories)


class HostState(FactBase[State]):
    """The state of everything the deploy manages on one host (see the module's docstring)."""

    @staticmethod
    def default() -> State:
        return State()

    def command(self, paths: tuple[str, ...] = (), texts: tuple[str, ...] = (), units: tuple[str, ...] = (),
                packages: tuple[str, ...] = (), accounts: tuple[str, ...] = (), records: str = "",
                slurm: str = "", owned: tuple[str, ...] = (), listed: tuple[str, ...] = ()) -> str:
        """``slurm``: the version Slurm's packages are pinned at; a host whose slurm-client is another asks
        slurmctld which release it runs (the upgrade guard needs it where the controller is not in the run).
        ``listed``: directories whose entries are read as paths, without their digests (Footprint.listed)."""
        named = f"{_words(paths)} {_entries(listed)}".strip()
        parts = [
            # One stat and one sha256sum for all the paths, not a few processes per path: on a host that runs many
            # machines (the test cluster) that is most of a no-op run's remote work. Both print nothing for a
            # missing path (the parser takes that as absent), and sha256sum nothing for a directory. A listed
            # directory that is missing or empty leaves its pattern as it is, which stat finds no path for.
            f"stat -L -c '@stat %F|%U|%G|%a|%n' -- {named} 2>/dev/null" if named else "",
            # Without a path sha256sum would read its input.
            f"sha256sum -- {_words(paths)} 2>/dev/null | sed 's/^/@sha /'" if paths else "",
            # A person's paths: stat without -L, and a digest only of what is a regular file itself (find's -type f
            # does not follow a link), so that root reads nothing a person's link points at.
            f"stat -c '@lstat %F|%u|%g|%a|%n' -- {_words(owned)} 2>/dev/null; "
            f"find {_words(owned)} -maxdepth 0 -type f -exec sha256sum -- {{}} + 2>/dev/null | sed 's/^/@sha /'"
            if owned else "",
            # The texts, and every record of what was applied (engine/ops.py) whatever its name, in one archive: one
            # tar for them all rather than a base64 per file. Missing paths are left out (tar goes on past them);
            # 512-byte blocks, not tar's default 10 KiB. Compressed (gzip is essential on Debian and Ubuntu): a
            # file's header and its padding are most of the archive, which is a quarter of its size and more after.
            "printf '@tar '; tar -c -h -b 1 --no-recursion -f - -- "
            f"{_words(texts)} {f'{shlex.quote(records)}/* {shlex.quote(records)}/slurm/*' if records else ''} "
            "2>/dev/null | gzip -1 | base64 -w0; echo" if texts or records else "",
            # A daemon whose executable a package replaced since it started (needrestart's test: the running
            # process's /proc/PID/exe reads "... (deleted)") still runs the old one, and owes a restart.
            f"systemctl show --property=Id,ActiveState,UnitFileState,LoadState,MainPID {_words(units)} 2>/dev/null "
            "| while IFS= read -r l; do case \"$l\" in MainPID=0|MainPID=) ;; MainPID=*) "
            "x=$(readlink \"/proc/${l#MainPID=}/exe\" 2>/dev/null); case \"$x\" in *' (deleted)') "
            "echo '@unit Replaced=yes';; esac;; *) echo \"@unit $l\";; esac; done" if units else "",
            f"dpkg-query -W -f='@pkg ${{Package}} ${{db:Status-Abbrev}} ${{Version}}\\n' {_words(packages)} "
            "2>/dev/null" if packages else "",
            f"getent passwd {_words(accounts)} | sed 's/^/@passwd /'; getent group {_words(accounts)} "
            "| sed 's/^/@group /'" if accounts else "",
            # Only the name and the expiry day of shadow's fields: never the password hash.
            f"getent shadow {_words(accounts)} | cut -d: -f1,8 | sed 's/^/@expire /'" if accounts else "",
            f"[ \"$(dpkg-query -W -f='${{Version}}' slurm-client 2>/dev/null)\" = {shlex.quote(slurm)} ] || "
            f"echo \"@slurmctld $({controller.VERSION_COMMAND})\"" if slurm else "",
            # systemd writes the container it finds itself in here at boot: what systemd-detect-virt --container
            # says, without its process and probes.
            "echo \"@container $(cat /run/systemd/container 2>/dev/null || echo none)\"",
            "echo \"@os $(. /etc/os-release 2>/dev/null; echo \"${ID:-unknown} ${VERSION_ID:-}\")\"",
            "echo \"@arch $(dpkg --print-architecture 2>/dev/null)\"",
        ]
        return "; ".join(p for p in parts if p) + "; true"

    def process(self, output: Iterable[str]) -> State:
        state = State()
        unit: dict[str, str] = {}

        def end_unit() -> None:
            if unit.get("Id"):
                state.units[unit["Id"]] = Unit(
                    unit.get("ActiveState") in ("active", "activating", "reloading"),
                    unit.get("UnitFileState") in ("enabled", "enabled-runtime", "static", "alias"),
                    unit.get("LoadState") == "loaded",
                    unit.get("Replaced") == "yes")
            unit.clear()

        found: dict[str, tuple[str, str, str, str]] = {}
        digests: dict[str, str] = {}
        for line in output:
            kind, _, rest = line.partition(" ")
            if kind in ("@stat", "@lstat"):
                what, user, group, mode, path = rest.split("|", 4)
                found[path] = (_KINDS.get(what.removeprefix("regular empty "), what), user, group, mode)
                if kind == "@lstat" and found[path][0] not in ("file", "dir"):
                    found[path] = ("link" if what == "symbolic link" else "other", user, group, mode)
            elif kind == "@sha":
                digest, _, path = rest.partition("  ")
                digests[path] = digest
            elif kind == "@tar" and rest.strip():
                state.texts.update(_texts(base64.b64decode(rest)))
            elif kind == "@unit":
                if not rest.strip():  # systemctl separates units with a blank line
                    end_unit()
                    continue
                key, _, value = rest.partition("=")
                unit[key] = value
            elif kind == "@pkg":
                name, status, version = (rest.split(None, 2) + ["", ""])[:3]
                if status.startswith(("ii", "hi")):  # installed; "hi": and held
                    state.packages[name] = version
                    if status.startswith("h"):
                        state.held.add(name)
            elif kind in ("@passwd", "@group"):
                fields = rest.split(":")
                if len(fields) >= 3 and fields[2].isdigit():
                    (state.users if kind == "@passwd" else state.groups).append(Account(fields[0], int(fields[2])))
                if kind == "@passwd" and len(fields) >= 7 and fields[2].isdigit() and fields[3].isdigit():
                    state.passwd[fields[0]] = Passwd(int(fields[2]), int(fields[3]), fields[5], fields[6])
                elif kind == "@group" and len(fields) >= 4:
                    state.members[fields[0]] = tuple(m for m in fields[3].split(",") if m)
            elif kind == "@expire":
                name, _, day = rest.strip().partition(":")
                state.expires[name] = day
            elif kind == "@container":
                state.container = rest.strip() not in ("", "none")
            elif kind == "@os":
                name, _, version = rest.strip().partition(" ")
                state.os = (name, version.strip())
            elif kind == "@arch":
                state.arch = rest.strip()
            elif kind == "@slurmctld":
                state.slurmctld = rest.strip()
        end_unit()
        for path, (what, user, group, mode) in found.items():
            if what in ("file", "dir", "link", "other"):
                state.paths[path] = Stat(what, digests.get(path) if what == "file" else None, user, group, mode)
        return state


_KINDS = {"regular file": "file", "file": "file", "directory": "dir"}  # stat's %F; "regular empty file" as a file


def _texts(archive: bytes) -> dict[str, str]:
    """The files of a tar archive, compressed or not, by their absolute path (tar stores them without the leading
    /)."""
    texts = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        for member in tar:
            if member.isfile():
                data = tar.extractfile(member)
                texts["/" + member.name.lstrip("/")] = data.read().decode(errors="replace") if data else ""
    return texts


def spec(footprint: Footprint, plan: bool) -> dict[str, tuple[str, ...] | str]:
    """What HostState reads for a footprint; for a plan, also the texts it shows the diffs of."""
    return {"paths": footprint.paths, "texts": footprint.texts + (footprint.shown if plan else ()),
            "units": footprint.units, "packages": tuple(dict.fromkeys(footprint.known + footprint.packages)),
            "accounts": footprint.accounts, "records": APPLIED_DIR, "slurm": footprint.slurm,
            "owned": footprint.owned, "listed": footprint.listed}


def read_states(run: PyinfraState, hosts: list[PyinfraHost], footprint: Callable[[tuple[str, ...]], Footprint],
                plan: bool) -> dict[PyinfraHost, State]:
    """Each host's state as it was before the run, in the order of ``hosts``: read for all of them in parallel
    (pyinfra itself reads a fact again each time an operation asks), covering what the deploy's steps manage on it
    (``footprint`` of its groups). ``plan``: also the texts a plan shows the diffs of."""

    def read(each: PyinfraHost) -> State:
        groups = each.data.clusterforge_machine.groups
        with ctx_host.use(each):
            refuse_sudo_password(each)
            return get_fact(run, each, HostState, kwargs=spec(footprint(groups), plan))

    # The deploy code itself runs in pyinfra's host pool, so the reads go to its fact pool.
    reads = {run.fact_pool.spawn(read, each): each for each in hosts}
    gevent.joinall(list(reads))
    return {each: g.get() for g, each in reads.items()}
