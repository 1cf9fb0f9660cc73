"""The deploy's operations, in pyinfra's style: each compares what the inventory wants with the host's state (read
once, roles/state.py) and yields commands only for what differs; a host that is already right gets none.

A daemon whose inputs changed owes a restart until it has happened: ``daemon`` compares the inputs with the
record written after the daemon last (re)started with them, not with the files on disk, so a run interrupted
between an upload and its restart still restarts on the next run.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Callable, Iterable
from io import BytesIO
from typing import Any

from pyinfra import host
from pyinfra.api import FileUploadCommand, StringCommand, operation
from pyinfra.api.operation import OperationMeta

from ..secrets import Secret
from . import planning, rehearsal
from .managed import APPLIED_DIR
from .state import State, host_state
from .upload import SecretFile
from .waits import Shown


def digest(*parts: bytes | str | Secret | None) -> str:
    """SHA-256 of some inputs, in order; None stands for an absent one."""
    total = hashlib.sha256()
    for part in parts:
        total.update(hashlib.sha256(b"\0absent" if part is None else _bytes(part)).digest())
    return total.hexdigest()


def _bytes(content: bytes | str | Secret) -> bytes:
    if isinstance(content, Secret):
        return content.reveal()
    return content.encode() if isinstance(content, str) else content


def sha256(content: bytes | str | Secret) -> str:
    return hashlib.sha256(_bytes(content)).hexdigest()


def _ownership(path: str, mode: str, user: str, group: str, state: State, always: bool) -> Iterable[StringCommand]:
    have = state.paths.get(path)
    if always or have is None or (have.user, have.group) != (user, group):
        yield StringCommand("chown", f"{user}:{group}", path)
    if always or have is None or have.mode != mode.lstrip("0"):
        yield StringCommand("chmod", mode, path)


def will_change(path: str, content: bytes | str | Secret | None) -> bool:
    """Whether this run changes the file (or removes it), from the state read before the run."""
    have = host_state().paths.get(path)
    if content is None:
        return have is not None
    return have is None or have.sha256 != sha256(content)


@operation(is_idempotent=True)
def _file(path: str, content: bytes | str | Secret, mode: str = "0644", user: str = "root", group: str = "root"):
    """The file holds exactly ``content`` with this owner and mode. A Secret is uploaded from memory and never
    shown."""
    state = host_state()
    changed = will_change(path, content)
    if changed:
        source = SecretFile(content) if isinstance(content, Secret) else BytesIO(_bytes(content))
        # /tmp as the upload's staging directory: asking the host for its TMPDIR would cost a remote command.
        yield FileUploadCommand(source, path,
                                remote_temp_filename=host.get_temp_filename(path, temp_directory="/tmp"))
    commands = list(_ownership(path, mode, user, group, state, always=changed))
    if not changed and not commands:
        host.noop(f"{path} is as the inventory says")
    yield from commands


@operation(is_idempotent=True)
def _absent(path: str):
    if host_state().paths.get(path) is None:
        host.noop(f"{path} is absent")
        return
    yield StringCommand("rm", "-f", path)


@operation(is_idempotent=True)
def _directory(path: str, mode: str = "0755", user: str = "root", group: str = "root"):
    state = host_state()
    have = state.paths.get(path)
    if have is None:
        yield StringCommand("mkdir", "-p", path)
    commands = list(_ownership(path, mode, user, group, state, always=have is None))
    if have is not None and not commands:
        host.noop(f"{path} is as the inventory says")
    yield from commands


def record_path(name: str) -> str:
    return f"{APPLIED_DIR}/{name}"


def record_command(name: str, value: str) -> str:
    """The command that records ``value`` as applied for ``name``; run only after the action it records."""
    return f"mkdir -p {APPLIED_DIR} && printf '%s\\n' {shlex.quote(value)} > {record_path(name)}"


def applied(name: str) -> str | None:
    """What the record says was last applied, or None where there is no record."""
    text = host_state().texts.get(record_path(name))
    return text.strip() if text is not None else None


def owed(name: str, inputs: str, changing: bool) -> bool:
    """Whether a daemon owes a restart for these inputs: its record says it runs others; or, where there is no record
    yet (a host deployed before records existed), whether this run changes the inputs."""
    record = applied(name)
    return record != inputs if record is not None else changing


def daemon_commands(unit: str, inputs: str, restart: bool, ready: str | None, settle: bool,
                    checked_later: bool = False) -> list[str]:
    """What ``daemon`` does on this host: nothing where ``unit`` is enabled, running and recorded as running
    ``inputs``. ``checked_later``: a later operation checks the daemon and records it once the check passes, so a
    (re)start here is not recorded, and one whose check failed is owed again by the next run."""
    have = host_state().unit(unit)
    full = unit if "." in unit else f"{unit}.service"
    commands = []
    if not have.enabled:
        commands.append(f"systemctl enable {full}")
    action = "start" if not have.active else "restart" if restart else None
    if action is not None:
        commands.append(f"systemctl {action} {full}")
    if (action is not None or settle) and ready:
        commands.append(ready)
    acted = action is not None or settle
    if (acted and not checked_later) or (not acted and applied(unit) != inputs):
        commands.append(record_command(unit, inputs))
    return commands


@operation()
def _daemon(unit: str, inputs: str, restart: bool, ready: str | None = None, here: bool = True,
            settle: bool = False, checked_later: bool = False):
    """``unit`` runs (and is enabled) with ``inputs`` applied: started if it is not running, restarted if
    ``restart`` (it owes one), then, once ``ready`` succeeds, recorded as running these inputs. ``settle``: it was
    restarted earlier in this run; wait for it and record. ``here=False``: not on this host (the operation is still
    there, so that hosts order their daemons through it)."""
    commands = daemon_commands(unit, inputs, restart, ready, settle, checked_later) if here else []
    if not commands:
        host.noop(f"{unit} runs with its current inputs" if here else f"no {unit} here")
        return
    yield from commands


@operation(is_idempotent=True)
def _stopped(unit: str, arriving: bool = False):
    """``unit`` is stopped and disabled (installed by a dependency, not used by this cluster). ``arriving``: its
    package comes in this run, and its maintainer script enables it."""
    have = host_state().unit(unit)
    if not have.active and not have.enabled and not (arriving and not have.known):
        host.noop(f"{unit} is stopped and disabled")
        return
    yield f"systemctl disable --now {unit if '.' in unit else unit + '.service'}"


@operation()
def _commands(commands: list[str], otherwise: str):
    """The commands a decision made from the state asks for, in order; none, and ``otherwise`` said, if it asks
    for none."""
    if not commands:
        host.noop(otherwise)
        return
    yield from commands


# --- what `clusterforge plan` says of each operation that would act (roles/planning.py) --------------------------

Description = tuple[list[str], str | None]  # lines an admin reads, and a file's diff
_DESCRIBERS: dict[object, Callable[..., Description]] = {}


def describes(op: object) -> Callable[[Callable[..., Description]], Callable[..., Description]]:
    """Registers what the plan says of ``op``, from the arguments it would get (less its name)."""

    def register(function: Callable[..., Description]) -> Callable[..., Description]:
        _DESCRIBERS[op] = function
        return function

    return register


def _describe(op: object, arguments: dict[str, Any]) -> Description:
    describer = _DESCRIBERS.get(op)
    if describer is None:
        return [getattr(op, "__name__", str(op))], None
    return describer(**{k: v for k, v in arguments.items() if k != "name" and not k.startswith("_")})


def _ownership_lines(path: str, mode: str, user: str, group: str) -> list[str]:
    """What ``_ownership`` would change on a path that exists, said."""
    state = host_state()
    have = state.paths.get(path)
    if have is None:
        return []
    return [f"{path}: owner {have.user}:{have.group} -> {user}:{group}" if command.bits[0] == "chown"
            else f"{path}: mode {have.mode} -> {mode.lstrip('0')}"
            for command in _ownership(path, mode, user, group, state, always=False)]


@describes(_file)
def _plan_file(path: str, content: bytes | str | Secret, mode: str = "0644", user: str = "root",
               group: str = "root") -> Description:
    have = host_state().paths.get(path)
    if not will_change(path, content):
        return _ownership_lines(path, mode, user, group), None
    what = "created" if have is None else "changed"
    if isinstance(content, Secret):  # never its value, nor a diff of it
        return [f"{path}: {what}; it holds a secret ({content.label}), which is not shown"], None
    if isinstance(content, bytes):
        return [f"{path}: {what} ({len(content)} bytes, sha256 {sha256(content)[:16]})"], None
    installed = host_state().texts.get(path)
    if have is not None and installed is None:
        return [f"{path}: {what} (its installed text is not read)"], None
    return [f"{path}: {what}"], planning.unified(path, installed if have is not None else None, content)


@describes(_absent)
def _plan_absent(path: str) -> Description:
    return [f"{path}: removed"], None


@describes(_directory)
def _plan_directory(path: str, mode: str = "0755", user: str = "root", group: str = "root") -> Description:
    if path not in host_state().paths:
        return [f"{path}: directory created ({user}:{group} {mode})"], None
    return _ownership_lines(path, mode, user, group), None


@describes(_daemon)
def _plan_daemon(unit: str, inputs: str, restart: bool, ready: str | None = None, here: bool = True,
                 settle: bool = False, checked_later: bool = False) -> Description:
    """``daemon_commands``' decision, said."""
    full = unit if "." in unit else f"{unit}.service"
    said = {f"systemctl enable {full}": f"{unit}: enabled",
            f"systemctl start {full}": f"{unit}: started (it is not running)",
            f"systemctl restart {full}": f"{unit}: restarted"}
    commands = daemon_commands(unit, inputs, restart, ready, settle, checked_later)
    lines = [said[c] for c in commands if c in said]
    if settle and not any(c.startswith(("systemctl start", "systemctl restart")) for c in commands):
        lines.append(f"{unit}: waited for (restarted earlier in this run)")
    if commands and not lines:
        lines.append(f"{unit}: recorded as running its current inputs (no restart)")
    return lines, None


@describes(_stopped)
def _plan_stopped(unit: str, arriving: bool = False) -> Description:
    return [f"{unit}: stopped and disabled"], None


@describes(_commands)
def _plan_commands(commands: list[str], otherwise: str) -> Description:
    return [c.text if isinstance(c, Shown) else f"run: {c}" for c in commands], None


def barrier(what: str) -> None:
    """An operation every host of the run gets and that does nothing: pyinfra orders operations across hosts only
    through the ones they share, so what comes after it on any host waits until every host is past it."""
    commands(name=what, commands=[], otherwise=what, shared=True)


def create(op: Callable[..., OperationMeta], acts: bool, shared: bool = False, why: str = "",
           **arguments: Any) -> OperationMeta | None:
    """Every operation of the roles is created here: where it acts, or, for a step every host must share so that
    pyinfra orders the hosts through it, everywhere unless the run is quiet (roles/rehearsal.py). While the steps
    are rehearsed, nothing is created; the rehearsal only learns whether the operation would act (and, for
    `clusterforge plan`, writes down what it would do, and ``why``)."""
    if rehearsal.rehearsing():
        rehearsal.note(acts)
        if acts and planning.planning():
            lines, diff = _describe(op, arguments)
            label = rehearsal.label(arguments.get("name", ""))
            planning.RECORDER.add(host.data.clusterforge_machine.name, label,
                                  [*lines, *([f"because {why}"] if why and why not in label else [])], diff)
        return None
    if acts or (shared and not rehearsal.quiet()):
        return op(**arguments)
    return None


# What the roles call. Each creates its operation only where the state shows something to do: pyinfra spends a few
# milliseconds preparing any operation, even one that does nothing, on every host, which is most of a no-op run.

def file(name: str, path: str, content: bytes | str | Secret, mode: str = "0644", user: str = "root",
         group: str = "root") -> None:
    acts = will_change(path, content) or bool(list(_ownership(path, mode, user, group, host_state(), always=False)))
    create(_file, acts, name=name, path=path, content=content, mode=mode, user=user, group=group)


def absent(name: str, path: str) -> None:
    create(_absent, host_state().paths.get(path) is not None, name=name, path=path)


def directory(name: str, path: str, mode: str = "0755", user: str = "root", group: str = "root") -> None:
    found = host_state()
    acts = path not in found.paths or bool(list(_ownership(path, mode, user, group, found, always=False)))
    create(_directory, acts, name=name, path=path, mode=mode, user=user, group=group)


def stopped(name: str, unit: str, arriving: bool = False) -> None:
    have = host_state().unit(unit)
    create(_stopped, have.active or have.enabled or (arriving and not have.known), name=name, unit=unit,
           arriving=arriving)


def daemon(name: str, unit: str, inputs: str, restart: bool, ready: str | None = None, here: bool = True,
           settle: bool = False, why: str = "", checked_later: bool = False) -> OperationMeta | None:
    """A daemon step, shared by every host so that daemons start in order across the cluster. ``why``: the reason
    of a restart, for `clusterforge plan`; ``checked_later``: see ``daemon_commands``."""
    acts = here and bool(daemon_commands(unit, inputs, restart, ready, settle, checked_later))
    restarts = restart and host_state().unit(unit).active
    return create(_daemon, acts, shared=True, why=why if restarts else "", name=name, unit=unit, inputs=inputs,
                  restart=restart, ready=ready, here=here, settle=settle, checked_later=checked_later)


def commands(name: str, commands: list[str], otherwise: str, shared: bool = False) -> None:
    """``commands`` as one operation; none where there are none, unless every host must share the operation."""
    create(_commands, bool(commands), shared=shared, name=name, commands=commands, otherwise=otherwise)
