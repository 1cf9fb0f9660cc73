"""The reset of one GPU through the program, whoever asks it: an admin (``clusterforge-health reset gpuN|BUS``), or the
repair loop on the controller, through the node's drain reason (``cf:repair:reset gpu3 0000:5d:00 ...``,
slurm/repairs.py), which only root, SlurmUser and Slurm's admins can set.

NVIDIA's reset (``nvidia-smi -r``, which refuses while a process uses the GPU), then the end of the faults of that GPU
that a reset ends (xid.py's "reset" class; faults.py), and no other. Before the reset, where the GPU holds a hardware
fault, the node keeps the evidence the reset wipes (evidence.py).

The loop's ask is read from the node's state as the check reads it (decide.py): a reason that asks, on a node drained
and held by nothing else (not down, failing, rebooting, nor in maintenance but the admission gate's hold of it alone).
A reset that fails is said in the node's reason (``cf:repair:reset-failed ...``), through the node-state gate's rule:
the node read again just before, and relabelled only where its reason is still the one that asked.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from . import evidence, parse, probes, statedir, xid
from . import faults as held_faults
from .decide import gate_hold, kept_by_another, scontrol
from .expect import Expectations
from .kernel import boot_id
from .reads import parsed
from ..slurm.commands import Run, said
from ..slurm.drains import drain_argv
from ..slurm.nodes import Node, parse_node, show_argv
from ..slurm.parse import ParseError
from ..slurm.repairs import ResetAsked, reset_asked, reset_failed_drain

RESET_TIMEOUT_S = 60  # nvidia-smi -r of one GPU
NOT_RESET, NO_SUCH_GPU = 1, 2


@dataclass(frozen=True, slots=True)
class Reset:
    rc: int = 0     # 0: reset, its faults released; NOT_RESET; NO_SUCH_GPU
    why: str = ""   # why not, in a few words (a reason's detail)


def reset_gpu(expect: Expectations, run: Run, state_dir: str, node: str, target: str,
              name: str | None = None) -> Reset:
    """Reset the GPU ``target`` (gpuN, or its bus: 0000:5d:00) and end its faults of the reset class. ``name``: the
    GPU is asked by its bus, and must be the inventory's ``name`` (gpu3) too."""
    listed, failed = parsed("gpus", ["nvidia-smi", "-q"], expect, run, parse.nvidia_smi_query)
    if listed is None:
        print(f"no GPU listed: {failed[0].reason if failed else 'nvidia-smi said nothing'}; nothing reset")
        return Reset(NOT_RESET, f"no GPU listed: {failed[0].drain.detail if failed else 'nvidia-smi said nothing'}")

    def label(gpu: parse.Gpu) -> str:
        return f"gpu{probes.inventory_index(gpu, expect.device_files)}"

    gpu = next((g for g in listed if target in ((xid.bus_id(g.bus_id), g.bus_id) if name is not None
                                                else (label(g), xid.bus_id(g.bus_id), g.bus_id))), None)
    if gpu is None:
        names = ", ".join(f"{label(g)} {xid.bus_id(g.bus_id)}" for g in listed)
        print(f"no GPU {target!r} on {node} (it has {names}): nothing reset", file=sys.stderr)
        return Reset(NO_SUCH_GPU, "not listed by nvidia-smi")
    if name is not None and label(gpu) != name:
        why = f"is {label(gpu)} here, not {name}"
        print(f"the GPU on {target} {why}: nothing reset", file=sys.stderr)
        return Reset(NO_SUCH_GPU, why)
    bus = xid.bus_id(gpu.bus_id)
    boot = boot_id(expect)
    # What the reset wipes, kept first where it ends a hardware fault the node holds (evidence.py).
    on_gpu = [f for f in held_faults.held(state_dir, boot) or [] if f.bus == bus]
    if on_gpu:
        kept_in = evidence.keep(expect, run, on_gpu, "reset")
        print(f"evidence of {probes.reason_of(on_gpu)} kept in {kept_in}")
        statedir.record(state_dir, [f"evidence kept in {kept_in} before the reset of {bus}"])
    answer = run(["nvidia-smi", "-r", "-i", gpu.bus_id], RESET_TIMEOUT_S)
    if answer.rc != 0:
        print(f"nvidia-smi -r -i {gpu.bus_id} {answer.why}: the GPU was not reset, its faults are still held")
        return Reset(NOT_RESET, f"nvidia-smi -r {answer.why}")
    kept, released = held_faults.released_by_reset(held_faults.held(state_dir, boot) or [], bus)
    held_faults.save(state_dir, boot, kept)
    for fault in released:
        print(f"released by the reset of {bus}: {fault.reason}")
    for fault in kept:
        print(f"still held until {held_faults.until([fault])}: {fault.reason}")
    return Reset()


def asking(run: Run, node: str) -> tuple[Node, ResetAsked] | None:
    """The node's state and the reset its reason asks of the check, read now; None where it asks none, or where
    anyone else holds the node (the check then leaves it, as decide does)."""
    shown = scontrol(run, show_argv(node))
    if shown.rc != 0:
        print(f"{said(show_argv(node))} {shown.why}: no reset asked")
        return None
    try:
        state = parse_node(shown.out)
    except ParseError as error:
        print(f"{error}: no reset asked")
        return None
    asked = reset_asked(state.reason) if state.drained else None
    if asked is None:
        return None
    hold = gate_hold(run, node, state, owned=state.reason)
    if kept_by_another(state, owned=state.reason, gate_held=hold is not None):
        print(f"leave {node}: the reset asked ({state.reason}) waits: held by another "
              f"({'+'.join(sorted(state.flags))})")
        return None
    return state, asked


def fail(run: Run, node: str, asked_by: str, asked: ResetAsked, why: str) -> bool:
    """Say in the node's reason that the reset it asked failed (``cf:repair:reset-failed``): the node read again just
    before, and relabelled only where its reason is still ``asked_by`` and nothing else holds it. Whether it was."""
    now = asking(run, node)
    if now is None or now[0].reason != asked_by:
        print(f"the reset of {asked.gpu} failed ({why}); {node}'s reason is no longer {asked_by!r}: left as it is")
        return False
    reason = reset_failed_drain(asked.gpu, asked.bus, why).reason[:probes.REASON_MAX]
    done = scontrol(run, drain_argv(node, reason))
    if done.rc != 0:
        print(f"could not relabel {node} {reason!r}: scontrol {done.why}; the next check asks again")
        return False
    print(f"drained {node}: {reason}")
    return True
