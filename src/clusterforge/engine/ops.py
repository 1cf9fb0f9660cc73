"""The operations the roles ask for, in pyinfra's style: each compares what the inventory wants with the host's state
(read once, engine/state.py) and is decided, once, into a Change (engine/change.py) with commands only for what
differs; a host that is already right gets none. Each returns its Change, so a role that chains on one reads
``acts`` rather than asking again. A role whose operation is none of these builds its Change itself and hands it to
``here.apply``.

A daemon whose inputs changed owes a restart until it has happened: ``daemon`` compares the inputs with the record
written after the daemon last (re)started with them, not with the files on disk, so a run interrupted between an
upload and its restart still restarts on the next run. A daemon that reads new files without a restart (``reload``:
sshd's drop-ins, the exports, Prometheus' rules) owes the reload the same way, under a record named from its unit.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Iterable, Sequence

from ..secrets import Secret
from .change import Change, Command, Diff, Upload
from .run import Here
from .state import APPLIED_DIR, Stat, State
from .waits import Shown

SYSTEMD_DIR = "/etc/systemd/system"  # where units and drop-ins of the site's own go
STAGED = ".clusterforge-new"  # the suffix of a file written beside the one it is renamed over (file(atomic=True))


Input = bytes | str | Secret | Change | None


def digest(*parts: Input) -> str:
    """SHA-256 of some inputs, in order; None stands for an absent one, a file's Change for what it holds."""
    total = hashlib.sha256()
    for part in parts:
        if isinstance(part, Change):
            total.update(bytes.fromhex(part.holds) if part.holds is not None else _ABSENT)
        else:
            total.update(_ABSENT if part is None else hashlib.sha256(_bytes(part)).digest())
    return total.hexdigest()


_ABSENT = hashlib.sha256(b"\0absent").digest()


def _bytes(content: bytes | str | Secret) -> bytes:
    if isinstance(content, Secret):
        return content.reveal()
    return content.encode() if isinstance(content, str) else content


def sha256(content: bytes | str | Secret) -> str:
    return hashlib.sha256(_bytes(content)).hexdigest()


def will_change(state: State, path: str, content: bytes | str | Secret | None) -> bool:
    """Whether the file differs from ``content`` (None: it must be absent) in the state read before the run."""
    have = state.paths.get(path)
    if content is None:
        return have is not None
    return have is None or have.sha256 != sha256(content)


def staged(path: str, by: str = "") -> str:
    """The name a file is written under beside ``path`` before it is renamed over it; ``by``: a writer's own part of
    the name, where several hosts write one shared file in the same run."""
    return f"{path}.{by}{STAGED}" if by else f"{path}{STAGED}"


def renamed_over(path: str, write: str, staged_as: str = "") -> list[str]:
    """The commands that put a file in place whole: ``write`` (a command that writes the file named after it:
    ``cp SOURCE``, ``cat >``) into a file beside ``path`` (``staged_as``; ``staged(path)`` where none), then that
    renamed over ``path``. A reader sees the old file or the new one, never a part of either, and a link at ``path``
    is replaced, never followed."""
    temporary = staged_as or staged(path)
    return [f"{write} {temporary}", f"mv -f {temporary} {path}"]


def _ownership(path: str, mode: str, user: str, group: str, have: Stat | None, always: bool) -> list[str]:
    commands = []
    if always or have is None or (have.user, have.group) != (user, group):
        commands.append(f"chown {user}:{group} {path}")
    if always or have is None or have.mode != mode.lstrip("0"):
        commands.append(f"chmod {mode} {path}")
    return commands


def _ownership_said(path: str, mode: str, user: str, group: str, have: Stat, commands: list[str]) -> list[str]:
    return [f"{path}: owner {have.user}:{have.group} -> {user}:{group}" if command.startswith("chown")
            else f"{path}: mode {have.mode} -> {mode.lstrip('0')}" for command in commands]


def file(here: Here, name: str, path: str, content: bytes | str | Secret, mode: str = "0644", user: str = "root",
         group: str = "root", atomic: bool = False, summary: str = "") -> Change:
    """The file holds exactly ``content`` with this owner and mode. A Secret is uploaded from memory and never
    shown, nor its diff. A file others may not read never holds its content readable by them, not for a moment:
    it exists with its mode before the content arrives (an upload into a new file creates it 0644, and a run that
    stops between the upload and a later chmod would leave it so). ``atomic``: the new content is written beside
    the file and renamed over it, so that a reader sees the old file or the new one, never a part of either (a
    program a daemon may start at any moment; pyinfra's own move from its staging directory is a copy where that
    is another file system). ``summary``: what a plan says of new content instead of its diff, for a file whose
    bytes differ from one run to the next (the deploy's stamp holds its time): a saved plan, planned again before
    it is applied, must find the same words."""
    have = here.state.paths.get(path)
    changing = will_change(here.state, path, content)
    ownership = _ownership(path, mode, user, group, have, always=changing)
    private = not int(mode, 8) & 0o044
    guard = [f"install -m {mode} /dev/null {path}" if have is None else f"chmod {mode} {path}"] if private else []
    if changing and atomic:
        beside = staged(path)
        commands: list[Command] = [*([f"install -m {mode} /dev/null {beside}"] if private else []),
                                   Upload(beside, content),
                                   *_ownership(beside, mode, user, group, None, always=True), f"mv -f {beside} {path}"]
    else:
        commands = [*guard, Upload(path, content), *ownership] if changing else [*ownership]
    diff = None
    if not changing:
        said = _ownership_said(path, mode, user, group, have, ownership) if have is not None else []
    else:
        what = "created" if have is None else "changed"
        installed = here.state.texts.get(path)
        if isinstance(content, Secret):
            said = [f"{path}: {what}; it holds a secret ({content.label}), which is not shown"]
        elif summary:
            said = [f"{path}: {what}: {summary}"]
        elif isinstance(content, bytes):
            said = [f"{path}: {what} ({len(content)} bytes, sha256 {sha256(content)[:16]})"]
        elif have is not None and installed is None:
            said = [f"{path}: {what} (its installed text is not read)"]
        else:
            said = [f"{path}: {what}"]
            diff = Diff(path, installed if have is not None else None, content)
    return here.apply(Change(name, tuple(commands), tuple(said), diff, otherwise=f"{path} is as the inventory says",
                             holds=sha256(content)))


def absent(here: Here, name: str, path: str) -> Change:
    there = path in here.state.paths
    return here.apply(Change(name, (f"rm -f {path}",) if there else (), (f"{path}: removed",),
                             otherwise=f"{path} is absent"))


def tree_absent(here: Here, name: str, path: str) -> Change:
    """The directory ``path`` and all it holds are gone (one of clusterforge's own that nothing uses any more)."""
    return commands(here, name=name, commands=[f"rm -rf {path}"] if path in here.state.paths else [],
                    otherwise=f"no {path}")


def directory(here: Here, name: str, path: str, mode: str = "0755", user: str = "root", group: str = "root",
              reset: bool = False) -> Change:
    """``reset``: owner and mode are set whatever the state read before the run says (a package that moves earlier
    in this run sets its own in its maintainer script)."""
    have = here.state.paths.get(path)
    ownership = _ownership(path, mode, user, group, have, always=have is None or reset)
    if have is None:
        commands, said = [f"mkdir -p {path}", *ownership], [f"{path}: directory created ({user}:{group} {mode})"]
    elif reset:
        commands, said = ownership, [f"{path}: {user}:{group} {mode.lstrip('0')} again (its package moved)"]
    else:
        commands, said = ownership, _ownership_said(path, mode, user, group, have, ownership)
    return here.apply(Change(name, tuple(commands), tuple(said), otherwise=f"{path} is as the inventory says"))


def stopped(here: Here, name: str, unit: str, arriving: bool = False) -> Change:
    """``unit`` is stopped and disabled (installed by a dependency, not used by this cluster). ``arriving``: its
    package comes in this run, and its maintainer script enables it."""
    have = here.state.unit(unit)
    acts = have.active or have.enabled or (arriving and not have.known)
    return here.apply(Change(name, (f"systemctl disable --now {_full(unit)}",) if acts else (),
                             (f"{unit}: stopped and disabled",), otherwise=f"{unit} is stopped and disabled"))


def record_path(name: str) -> str:
    return f"{APPLIED_DIR}/{name}"


def record_command(name: str, value: str) -> str:
    """The command that records ``value`` as applied for ``name``; run only after the action it records."""
    return f"mkdir -p {APPLIED_DIR} && printf '%s\\n' {shlex.quote(value)} > {record_path(name)}"


def applied(state: State, name: str) -> str | None:
    """What the record says was last applied, or None where there is no record."""
    text = state.texts.get(record_path(name))
    return text.strip() if text is not None else None


def owed(state: State, name: str, inputs: str, changing: bool) -> bool:
    """Whether a daemon owes a restart for these inputs: its record says it runs others; or, where there is no record
    yet (a host deployed before records existed), whether this run changes the inputs."""
    record = applied(state, name)
    return record != inputs if record is not None else changing


def _full(unit: str) -> str:
    return unit if "." in unit else f"{unit}.service"


def daemon(here: Here, name: str, unit: str, inputs: str, restart: bool, ready: str | None = None, there: bool = True,
           settle: bool = False, why: str = "", checked_later: bool = False, recorded: bool = False) -> Change:
    """``unit`` runs (and is enabled) with ``inputs`` applied: started if it is not running, restarted if ``restart``
    (it owes one), then, once ``ready`` succeeds, recorded as running these inputs; nothing where it is enabled,
    running and recorded as running ``inputs``. ``settle``: it was restarted earlier in this run; wait for it and
    record. ``checked_later``: a later operation checks the daemon and records it once the check passes, so a
    (re)start here is not recorded, and one whose check failed is owed again by the next run. ``there=False``: not
    on this host; the operation is still shared by every host, so that hosts order their daemons through it.
    ``recorded``: an earlier operation of this run recorded ``inputs`` (a daemon that a reboot restarts).
    ``why``: the reason of a restart, for `clusterforge plan`."""
    have = here.state.unit(unit)
    commands = []
    if there:
        if not have.enabled:
            commands.append(f"systemctl enable {_full(unit)}")
        action = "start" if not have.active else "restart" if restart else None
        if action is not None:
            commands.append(f"systemctl {action} {_full(unit)}")
        if (action is not None or settle) and ready:
            commands.append(ready)
        acted = action is not None or settle
        if (acted and not checked_later) or (not acted and not recorded and applied(here.state, unit) != inputs):
            commands.append(record_command(unit, inputs))
    said = {f"systemctl enable {_full(unit)}": f"{unit}: enabled",
            f"systemctl start {_full(unit)}": f"{unit}: started (it is not running)",
            f"systemctl restart {_full(unit)}": f"{unit}: restarted"}
    lines = [said[c] for c in commands if c in said]
    if settle and not any(c.startswith(("systemctl start", "systemctl restart")) for c in commands):
        lines.append(f"{unit}: waited for (restarted earlier in this run)")
    if commands and not lines:
        lines.append(f"{unit}: recorded as running its current inputs (no restart)")
    return here.apply(Change(name, tuple(commands), tuple(lines), why=why if restart and have.active else "",
                             otherwise=f"{unit} runs with its current inputs" if there else f"no {unit} here",
                             shared=True))


def changes(files: Iterable[Input]) -> bool:
    """Whether this run changes any of these files (their Changes; other inputs are not files of this step)."""
    return any(isinstance(f, Change) and (f.writes or (f.holds is None and f.acts)) for f in files)


def service(here: Here, name: str, unit: str, inputs: Sequence[Input] = (), changing: bool = False,
            restart_for: str = "", why: str = "", ready: str | None = None, there: bool = True, settle: bool = False,
            checked_later: bool = False, value: str | None = None, rebooting: bool = False) -> Change:
    """``unit`` runs with ``inputs`` applied: the Changes of the files its step wrote (what each holds, and whether
    this run writes it), and values another step writes (a key), with ``changing``: whether this run changes those.
    It owes a restart where its record says it runs other inputs (or, without a record, where this run changes
    them), or for ``restart_for``, a reason that is not its inputs (its package moved, the Slurm files changed),
    which is also the restart's reason for `clusterforge plan` (else ``why``). ``settle``: it was restarted earlier
    in this run, so it is waited for, not restarted. ``value``: what its record says it runs where that is not the
    inputs' digest (a GPU daemon's version). ``rebooting``: a reboot later in this run restarts it, and an earlier
    operation recorded ``value`` already: started where it is stopped, never restarted. The rest as ``daemon``."""
    running = value if value is not None else digest(*inputs)
    restart = there and not settle and not rebooting and (
        bool(restart_for) or owed(here.state, unit, running, changing or changes(inputs)))
    return daemon(here, name=name, unit=unit, inputs=running, restart=restart, ready=ready, there=there,
                  settle=settle, why=restart_for or why, checked_later=checked_later, recorded=rebooting)


NOTHING = "absent"  # the record of a unit that read its files gone


def reload_record(unit: str, reads: str) -> str:
    """The record of what ``unit`` last read of ``reads`` (a word: "configuration", "exports") without a restart."""
    return f"{unit.removesuffix('.service')}-{reads}"


def _starts(change: Change) -> bool:
    """Whether a daemon's Change (re)starts it."""
    return any(isinstance(c, str) and c.startswith(("systemctl start", "systemctl restart")) for c in change.commands)


def reload(here: Here, name: str, unit: str, reads: str, files: Sequence[Change], command: str = "",
           started: Change | None = None, formerly: str = "") -> Change:
    """``unit`` reads again, without a restart, the files this step wrote or removed (their Changes), by ``command``
    (``systemctl reload`` where none). Owed like a restart until its record (``reload_record``) says it read them,
    so that a run stopped between the upload and the reload reloads on the next. Without a record the unit never
    read them, even where a killed run left the files: owed wherever there is something to read, and where the files
    are all gone only if this run removes one (a reload is harmless, so a host deployed before the record existed
    reloads once). What it read of files all gone is recorded as NOTHING. ``started``: the unit's own operation of
    this run, whose (re)start read the files: recorded, not reloaded. ``formerly``: the record's name in an earlier
    release, which counts where there is none yet under this one (a deploy killed mid-way before the upgrade still
    owes its reload) and is removed once this one is written."""
    record = reload_record(unit, reads)
    gone = all(f.holds is None for f in files)
    read = NOTHING if gone else digest(*files)
    had = applied(here.state, record)
    if had is None and formerly:
        had = applied(here.state, formerly)
    due = had != read if had is not None else changes(files) if gone else True
    sent = [] if started is not None and _starts(started) else [command or f"systemctl reload {_full(unit)}"]
    old = [f"rm -f {record_path(formerly)}"] if formerly and record_path(formerly) in here.state.texts else []
    return commands(here, name=name, otherwise=f"{unit} has read its {reads}",
                    commands=[*sent, record_command(record, read), *old] if due else [])


def systemd_reads(here: Here, what: str, record: str, files: Sequence[Change]) -> Change:
    """systemd reads unit files or drop-ins this step wrote (their Changes): a daemon-reload, owed like a restart, so
    a run stopped between the upload and the reload reloads on the next (``record``: what systemd last read)."""
    read = digest(*files)
    due = owed(here.state, record, read, changes(files))
    return commands(here, name=f"systemd reads {what}", otherwise=f"systemd has read {what}",
                    commands=["systemctl daemon-reload", record_command(record, read)] if due else [])


def commands(here: Here, name: str, commands: list[str], otherwise: str, shared: bool = False) -> Change:
    """``commands`` as one operation; none where there are none, unless every host must share the operation."""
    said = tuple(c.text if isinstance(c, Shown) else f"run: {c}" for c in commands)
    return here.apply(Change(name, tuple(commands), said, otherwise=otherwise, shared=shared))


def barrier(here: Here, what: str) -> None:
    """An operation every host of the run gets and that does nothing: pyinfra orders operations across hosts only
    through the ones they share, so what comes after it on any host waits until every host is past it."""
    commands(here, name=what, commands=[], otherwise=what, shared=True)


def _systemd_record(what: str) -> str:
    """The record of the drop-in systemd last read for ``what``."""
    return f"systemd-{what}"


def dropin(here: Here, what: str, path: str, content: str, purpose: str) -> Change:
    """A systemd drop-in over a packaged unit (``what`` names the daemon), written and then read by systemd
    (``systemd_reads``). The drop-in's Change."""
    directory(here, name=f"{what} drop-in directory", path=path.rsplit("/", 1)[0])
    written = file(here, name=purpose, path=path, content=content)
    systemd_reads(here, f"the {what} drop-in", _systemd_record(what), [written])
    return written


def dropin_gone(here: Here, what: str, unit: str, path: str) -> None:
    """The daemon clusterforge ran from a drop-in no longer runs here: stopped and disabled, the drop-in removed and
    systemd told. Only where the drop-in shows clusterforge ran it. What systemd read is recorded as no drop-in, so
    that one brought back later, the same bytes, is read again, even by a run stopped after its upload."""
    if path not in here.state.paths:
        return
    here.apply(Change(f"{what} no longer runs here",
                      (f"systemctl disable --now {_full(unit)}", f"rm -f {path}", "systemctl daemon-reload",
                       record_command(_systemd_record(what), "absent")),
                      (f"{what}: stopped and disabled", f"{path}: removed")))
