"""A stand-in controller for the Slurm exporter, shared by its tests and its benchmark: a directory holding only the
program as the deploy ships it (one file, render/programs.py) and the launcher the deploy installs, run by Debian's
python3 in isolated mode, and a bin/ of stand-ins for sinfo, squeue, sdiag and sacctmgr that print a capture's
files, and only for the command line the exporter must run. The sinfo captures were taken with the exporter's
listing then, without the partitions' time limit (captures/README.md): the stand-in prints them with it, "infinite"
on every line, as each of the captured cluster's partitions had MaxTime=INFINITE (``listing``)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from clusterforge.exporter.jobs import FORMAT
from clusterforge.render import slurm_exporter
from clusterforge.render.programs import EXPORTER, exporter_program
from clusterforge.slurm import jobs, nodes

PYTHON = "/usr/bin/python3"
CAPTURES = Path(__file__).parent / "captures"

# What each stand-in expects to be asked: the commands of captures/README.md.
EXPECTED = {
    "sinfo": " ".join(nodes.sinfo_argv()[1:]),
    "squeue": " ".join(jobs.queue_argv(FORMAT)[1:]),
    "sdiag": "",
    "sacctmgr": "-n -P show cluster format=cluster",
    "scontrol": "-o show reservation",
}
PRINTS_CAPTURE = 'cat "$CAPTURES/{name}.txt"'


def listing(capture: str) -> str:
    """A sinfo capture as slurm/nodes.py's listing prints it: the Time field after the partition, "infinite"."""
    return re.sub(r"^([^|]*\|[^|]*\|)", r"\1infinite|", capture, flags=re.M)


class Controller:
    """The program shipped into ``root``, its stand-ins printing the files of ``captures`` (sinfo.txt, ...), as
    copied into ``self.captures`` (sinfo.txt as ``listing`` prints it)."""

    def __init__(self, root: Path, captures: Path) -> None:
        self.program = root / "clusterforge-slurm-exporter.pyz"
        self.program.write_bytes(exporter_program())
        self.launcher = root / "clusterforge-slurm-exporter"
        # The launcher the deploy installs, on the program here instead of /usr/lib/clusterforge.
        text = slurm_exporter.launcher()
        assert text.startswith(f"#!{PYTHON} -I\n") and repr(EXPORTER) in text
        self.launcher.write_text(text.replace(repr(EXPORTER), repr(str(self.program))))
        self.bin = root / "bin"
        self.bin.mkdir()
        self.state = root / "state"  # where a stand-in may leave a note (its pid)
        self.state.mkdir()
        self.captures = root / "captures"
        shutil.copytree(captures, self.captures)
        (self.captures / "sinfo.txt").write_text(listing((captures / "sinfo.txt").read_text()))
        self.env = {"PATH": f"{self.bin}:/usr/bin:/bin", "CAPTURES": str(self.captures), "STATE": str(self.state)}
        for name in EXPECTED:
            self.answer(name, PRINTS_CAPTURE)

    def answer(self, name: str, body: str) -> None:
        """The stand-in ``name``: exits 2 for any command line but the expected one, else runs ``body`` (where
        ``{name}`` is its name)."""
        path = self.bin / name
        path.write_text(f'#!/bin/sh\n[ "$*" = "{EXPECTED[name]}" ] || '
                        f'{{ echo "{name}: unexpected arguments: $*" >&2; exit 2; }}\n{body.format(name=name)}\n')
        path.chmod(0o755)

    def argv(self, *args: str) -> list[str]:
        return [PYTHON, "-I", str(self.launcher), *args]

    def once(self, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
        result = subprocess.run(self.argv("--once", *args), env=self.env, capture_output=True, text=True,
                                timeout=60)
        return result, samples(result.stdout)


def samples(text: str) -> dict:
    """(name, sorted label pairs) -> value, for every sample of the exposition."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def of(found: dict, name: str) -> dict:
    """The samples of one metric, by their labels' values in the order of the labels' names."""
    return {tuple(v for _, v in labels): value for (n, labels), value in found.items() if n == name}
