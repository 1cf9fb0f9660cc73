"""The repair loop as the deploy ships it (render/programs.py, render/repair.py): one file holding its package and the
slurm and health modules it imports, run by a bare python3 through its launcher."""

from __future__ import annotations

import io
import subprocess
import zipfile
from pathlib import Path

from slurm_standin import Slurm, shell

from clusterforge.render import programs, repair
from clusterforge.repair import plan as repair_plan

SRC = Path(__file__).resolve().parents[2] / "src" / "clusterforge"
PYTHON = "/usr/bin/python3"


def test_the_program_holds_the_loop_and_what_it_imports_and_nothing_of_the_nodes_check():
    files = programs.repair_files()
    assert {f"repair/{p.name}" for p in (SRC / "repair").glob("*.py")} <= set(files)
    assert {"slurm/drains.py", "slurm/repairs.py", "slurm/nodes.py", "health/xid.py", "__init__.py"} <= set(files)
    assert not {"health/program.py", "health/probes.py", "gate/passes.py"} & set(files)
    with zipfile.ZipFile(io.BytesIO(programs.repair_program())) as zipped:
        assert zipped.namelist() == [f"clusterforge_repair/{n}" for n in files]


def test_the_launcher_runs_a_pass_alone_on_the_standard_library(tmp_path):
    """A bare python3 (-I, and -S: no site packages) runs a pass through the launcher on the stand-in's commands: a
    cluster with nothing to repair is read, and nothing is asked."""
    program = tmp_path / "clusterforge-repair.pyz"
    program.write_bytes(programs.repair_program())
    text = repair.launcher()
    assert text.startswith("#!/usr/bin/python3 -I\n") and repr(programs.REPAIR) in text
    launcher = tmp_path / "clusterforge-repair"
    launcher.write_text(text.replace(repr(programs.REPAIR), repr(str(program))).replace("-I\n", "-I -S\n", 1))
    plan = tmp_path / "repair.json"
    plan.write_text(repair_plan.Plan(nodes={"gpu01": repair_plan.NodePlan("dgx")},
                                     profiles={"dgx": repair_plan.Policy("on")}).to_json())
    bin_dir = shell.bin_dir(tmp_path / "bin")
    shell.save(Slurm.of(["gpu01"]), tmp_path / "slurm")
    run = subprocess.run([PYTHON, "-I", "-S", str(launcher), "--once", "--plan", str(plan), "--state-dir",
                          str(tmp_path / "state"), "--metrics-dir", str(tmp_path)], capture_output=True, text=True,
                         timeout=60, env={"PATH": f"{bin_dir}:/usr/bin:/bin", shell.STATE: str(tmp_path / "slurm")},
                         check=False)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert [a[:2] for a in shell.load(tmp_path / "slurm").asked] == [["sinfo", "--noheader"], ["scontrol", "-o"]]
    assert "clusterforge_repair_in_progress 0" in (tmp_path / "clusterforge_repair.prom").read_text()
    said = subprocess.run([PYTHON, "-I", "-S", str(launcher), "--status", "--state-dir", str(tmp_path / "state")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (said.returncode, said.stdout) == (0, "breaker: closed\n")


def test_the_loop_reads_the_plan_where_the_deploy_writes_it():
    assert repair_plan.PATH == repair.PATH and repair.PATH == "/etc/clusterforge/repair.json"


def test_check_expects_the_loop_on_the_controller_where_a_profile_repairs(monkeypatch):
    from clusterforge.check.probes import expected_units
    from clusterforge.loader import load_cluster
    from clusterforge.model.resolve import resolve

    monkeypatch.setenv("CLUSTERFORGE_TESTBED_REPAIR", "off")
    valid = resolve(load_cluster("inventories/vagrant.py"))
    assert "clusterforge-repair" not in expected_units(next(m for m in valid.machines if m.name == "ctl"), valid)
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_REPAIR", "observe")
    repairing = resolve(load_cluster("inventories/vagrant.py"))
    units = {m.name: expected_units(m, repairing) for m in repairing.machines}
    assert units["ctl"][-1] == "clusterforge-repair" == repair.UNIT.removesuffix(".service")
    assert not any("clusterforge-repair" in u for name, each in units.items() if name != "ctl" for u in each)
