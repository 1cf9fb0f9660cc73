"""What an acceptance test is: one object (``AcceptanceTest``) holding all the registry and its callers know of it,
and the small parts the tests' modules share (the floor a number is held to, the node a plan is made for, the
standard way to run a tool as one task, a result against its floor, the meaning of an exit status).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..verdict import Result

CUT = 124  # timeout(1)'s status for a command it ended

Entry = Mapping[str, Any]  # one test's entry of admission.json (the registry's ``entries``)


@dataclass(frozen=True, slots=True)
class Floor:
    """A number a test is held to: its key (a field of the inventory's ``Floors``), the field's description, and
    its default per GPU family (health/gpu_names.py's ``family``: "h100", "h200"); a family absent has none."""

    key: str
    description: str
    defaults: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Setup:
    """What a node's plan gives a test's arguments and its expected time: its GPUs, the DCGM level asked, how many
    HCAs it tests, and whether ib_write_bw reads GPU memory."""

    gpus: int
    dcgm_level: int
    hcas: int = 1
    ib_cuda: bool = False


# launch(entry, nodes, bound, srun, argv): the script's lines that run the tool, given timeout(1)'s words (``bound``)
# and srun's with its node count and image (``srun``).
Launch = Callable[[Entry, Sequence[str], list[str], list[str], list[str]], list[str]]
# judge(entry, node, output, exit_status): the results of a run that was not cut; raises ParseError (parse/) where
# the output cannot be read, which the registry's judge turns into a failure naming the exit status's meaning.
Judge = Callable[[Entry, str, str, int], list[Result]]


def one_task(entry: Entry, nodes: Sequence[str], bound: list[str], srun: list[str], argv: list[str]) -> list[str]:
    """The tool run once on the node with its GPUs: every single-node test but one that runs several steps."""
    return [shlex.join(bound + srun + single_task(entry) + argv)]


def single_task(entry: Entry) -> list[str]:
    gpus = int(entry["gpus"])
    return ["--ntasks=1", *([f"--gpus-per-node={gpus}"] if gpus else [])]


@dataclass(frozen=True, slots=True)
class AcceptanceTest:
    """One acceptance test: the name the inventory and admission.json call it by, the program it runs (a file of
    ``Programs.bin_dir`` or the image), the unit of its numbers, the floors it is held to, the seconds it takes on a
    healthy 8-GPU node (by which a node's budget is shared out), its arguments, how its script runs it, and how its
    output is judged. ``exits``: what the tool's exit statuses mean, for a reason. ``across_nodes``: run by
    `clusterforge accept` only, on two nodes or more (its entry's timeout is twice its time, not a share of the
    budget). ``default``: in ``Admission.tests`` unless the inventory names its tests. ``hcas``: run once per HCA
    (its entry holds them, and whether it reads GPU memory)."""

    name: str
    program: str
    unit: str
    expected_s: Callable[[Setup], int]
    arguments: Callable[[Setup], list[str]]
    judge: Judge
    floors: tuple[Floor, ...] = ()
    exits: Mapping[int, str] = field(default_factory=dict)
    launch: Launch = one_task
    across_nodes: bool = False
    default: bool = True
    hcas: bool = False

    @property
    def floor_keys(self) -> tuple[str, ...]:
        return tuple(floor.key for floor in self.floors)


def exit_meaning(exits: Mapping[int, str], status: int) -> str:
    """An exit status as a reason gives it, with its meaning where the tool documents one; empty for 0."""
    if status == 0:
        return ""
    return f"exit status {status}" + (f" ({exits[status]})" if status in exits else "")


def number_result(node: str, test: str, value: float, floor: float, unit: str, detail: str) -> Result:
    return Result(node, test, value >= floor, value, unit, floor, detail)
