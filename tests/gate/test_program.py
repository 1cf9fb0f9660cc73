"""The gate as the deploy ships it (render/programs.py, render/gate.py): one file holding its package and the health
and admission modules it imports, found from its imports; the same bytes on every build; nothing imported but the
standard library (a bare python3 imports every module of it); its launcher runs it from that file."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import zipfile
from pathlib import Path

from slurm_standin import Slurm, shell

from clusterforge.render import gate, programs

PYTHON = "/usr/bin/python3"  # the controller's: Debian's python3, as the launcher runs it
SRC = Path(programs.__file__).resolve().parents[1]


def test_admission_holds_what_the_gate_ships_and_nothing_else():
    """admission/ is the gate's: every module of it is in the gate's file, found from the gate's imports. What runs
    on the admin's machine alone (accept's rounds, bisection, report, admit) is accept/'s."""
    admission = {p.relative_to(SRC).as_posix() for p in (SRC / "admission").rglob("*.py")}
    assert admission and admission <= set(programs.gate_files())
    assert not any(f.startswith("accept/") for f in programs.gate_files())


def test_the_program_holds_the_gate_and_what_it_imports_in_clusterforges_layout():
    files = programs.gate_files()
    assert {f"gate/{p.name}" for p in (SRC / "gate").glob("*.py")} <= set(files)
    assert {"slurm/reservations.py", "slurm/drains.py", "slurm/commands.py", "admission/tests/__init__.py",
            "admission/verdict.py", "__init__.py"} <= set(files)
    assert not {"health/program.py", "health/probes.py"} & set(files)  # the node's check is not the gate's
    with zipfile.ZipFile(io.BytesIO(programs.gate_program())) as zipped:
        assert zipped.namelist() == [f"clusterforge_gate/{n}" for n in files]
        assert zipped.read("clusterforge_gate/gate/passes.py") == (SRC / "gate" / "passes.py").read_bytes()


def test_the_program_is_the_same_bytes_on_every_build():
    code = ("import hashlib, os; os.umask(0o077); from clusterforge.render import programs; "
            "print(hashlib.sha256(programs.gate_program()).hexdigest())")
    elsewhere = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, check=True,
                               timeout=60).stdout.strip()
    assert elsewhere == hashlib.sha256(programs.gate_program()).hexdigest()


def test_the_launcher_runs_the_program_alone_on_the_standard_library(tmp_path):
    """A bare python3 (-I, and -S: no site packages) runs a pass through the launcher: Slurm's commands here are the
    stand-in's (tests/slurm_standin), a cluster with no hold, so the pass reads everything and holds nothing."""
    program = tmp_path / "clusterforge-gate.pyz"
    program.write_bytes(programs.gate_program())
    text = gate.launcher()
    assert text.startswith("#!/usr/bin/python3 -I\n") and repr(gate.PROGRAM) in text
    launcher = tmp_path / "clusterforge-gate"
    launcher.write_text(text.replace(repr(gate.PROGRAM), repr(str(program))).replace("-I\n", "-I -S\n", 1))
    launcher.chmod(0o755)
    bin_dir = shell.bin_dir(tmp_path / "bin")
    slurm = Slurm.of(["gpu01"])
    shell.save(slurm, tmp_path / "slurm")
    run = subprocess.run([PYTHON, "-I", "-S", str(launcher), "--once", "--plan", str(tmp_path / "none.json"),
                          "--state-dir", str(tmp_path / "state")], capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", shell.STATE: str(tmp_path / "slurm")}, check=False)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert [a[:3] for a in shell.load(tmp_path / "slurm").asked] == [
        ["scontrol", "-o", "show"], ["scontrol", "-o", "show"], ["sinfo", "--noheader", "--all"]]  # read, all of it
    # Without Slurm's commands the pass says it read nothing, and changes nothing.
    blind = subprocess.run([PYTHON, "-I", "-S", str(launcher), "--once", "--state-dir", str(tmp_path / "state")],
                           capture_output=True, text=True, timeout=60, env={"PATH": "/nonexistent"}, check=False)
    assert blind.returncode == 0 and "this pass reads nothing" in blind.stderr, blind.stderr
    assert not (tmp_path / "state").exists()
    wrong = subprocess.run([PYTHON, "-I", "-S", str(launcher), "--interval", "0"], capture_output=True, text=True,
                           timeout=60, check=False)
    assert wrong.returncode == 2 and "not a number of seconds above 0: '0'" in wrong.stderr


def test_the_gate_reads_the_plan_where_the_deploy_writes_it():
    from clusterforge.gate import PLAN
    from clusterforge.render import admission

    assert PLAN == admission.PATH
