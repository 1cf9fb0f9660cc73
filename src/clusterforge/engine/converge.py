"""How the deploy's steps become pyinfra operations: rehearsed on every host first, so that a run with nothing to do
creates no operation at all.

pyinfra spends a few milliseconds preparing each operation on each host (it reads the call stack to order it), even
one that does nothing, and the steps hosts must pass together exist on every host only to order them. So before the
run creates any operation, ``converge`` rehearses the deploy's steps on every host of the run: each operation is
decided into its Change (engine/change.py) from the host states read before anything changes, and the rehearsal only
notes whether any acts. When none would act on any host, the run is quiet and creates nothing, not even the shared
steps: with nothing to do there is nothing to order. Otherwise each host runs its steps again and every Change that
acts, or that every host shares, becomes one generic pyinfra operation that sends the Change's commands.

A `clusterforge plan` run (engine/planning.py) rehearses, writes down every Change that would act, and stops there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from io import BytesIO

from pyinfra import host
from pyinfra.api import FunctionCommand, operation
from pyinfra.api import Host as PyinfraHost
from pyinfra.api import State as PyinfraState
from pyinfra.api.command import PyinfraCommand
from pyinfra.context import ctx_host

from ..secrets import Secret
from . import events
from .change import Call, Change, Command, Upload
from .remote import StagedUpload, secret_write, uses_sudo
from .run import DeployRun, Here
from .upload import SecretFile


def converge(steps: Callable[[Here], None]) -> None:
    """This host's part of the run: ``steps`` (the deploy's order, calling each step) rehearsed on every host of the
    run (once per run), then, unless the run is quiet, run here for real. For a plan, what the rehearsal found is
    written down instead."""
    run = DeployRun.current()
    recorder = run.recorder
    if recorder is not None:
        run.once("plan", lambda: recorder.write(
            [(here.machine.name, here.label(change.name), change) for here, change in _rehearse(run, steps)],
            [h.data.clusterforge_machine.name for h in run.hosts],
            [h.data.clusterforge_machine.name for h in run.pyinfra.failed_hosts]))
        events.emit("planned", host=events.machine_name(ctx_host.get()))
    elif not run.once("quiet", lambda: not _rehearse(run, steps)):
        steps(run.here(ctx_host.get(), create))


def _rehearse(run: DeployRun, steps: Callable[[Here], None]) -> list[tuple[Here, Change]]:
    """Every Change that would act, on every host of the run, with its host. The hosts are rehearsed in one greenlet
    while every other host's waits for the run's answer; each host's pyinfra context is set for what its steps read
    (the accounting database, once per run)."""
    acting: list[tuple[Here, Change]] = []
    for each in run.hosts:
        with ctx_host.use(each):
            steps(run.here(each, lambda here, change: acting.append((here, change)) if change.acts else None))
    return acting


def create(here: Here, change: Change) -> None:
    """A real run: the Change as a pyinfra operation, where it acts or where every host must share it."""
    if change.acts or change.shared:
        _converged(name=here.label(change.name), commands=change.commands, otherwise=change.otherwise)


@operation()
def _converged(commands: tuple[Command, ...], otherwise: str) -> Iterator[PyinfraCommand | str]:
    """The commands a Change decided on, in order; none, and ``otherwise`` said, where it decided on none."""
    if not commands:
        host.noop(otherwise)
        return
    for command in commands:
        yield _pyinfra_command(command)


def _pyinfra_command(command: Command) -> PyinfraCommand | str:  # a str is a shell command
    if isinstance(command, Upload):
        content = command.content
        if isinstance(content, Secret) and uses_sudo(host):
            # pyinfra's sudo upload stages the file where the SSH user can read it: the secret goes on stdin instead.
            return secret_write(content, command.path)
        source = SecretFile(content) if isinstance(content, Secret) else BytesIO(
            content.encode() if isinstance(content, str) else content)
        return StagedUpload(source, command.path)
    if isinstance(command, Call):
        return FunctionCommand(_called, (command,), {})
    return command


def _called(state: PyinfraState, host: PyinfraHost, command: Call) -> None:
    """An operation's Python function, given this host as a step sees it (pyinfra passes its state and the host to a
    function that names both)."""
    run = DeployRun.of(state)
    assert run is not None
    try:
        command.function(run.here(host, _no_operation), *command.args, **command.kwargs)
    except Exception as error:
        events.failed_with(state, host, error)  # its own words: pyinfra logs the exception's class and arguments
        raise


def _no_operation(here: Here, change: Change) -> None:
    raise RuntimeError(f"{here.name}: {change.name}: an operation's function cannot create operations")
