"""Slurm's commands for one scrape, each bounded, all at once: a scrape lasts as long as its slowest command, never
longer than the timeout (and the moment it takes to kill what overran it). Each runs through the health program's
runner (slurm/commands.py, shipped with the exporter), so both programs run and kill commands the same way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from ..slurm.commands import Answer, run


def run_all(commands: Mapping[str, Sequence[str]], timeout: float) -> dict[str, Answer]:
    """Each named command run at the same time, each under ``timeout``; their answers by name."""
    with ThreadPoolExecutor(max_workers=len(commands)) as pool:
        futures = {name: pool.submit(run, argv, timeout) for name, argv in commands.items()}
        return {name: future.result() for name, future in futures.items()}
