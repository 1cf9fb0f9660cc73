"""The node health check through the whole deploy on simulated hosts: every compute node gets the health package
as one file (every module of clusterforge/health in it), the launchers slurm.conf names (HealthCheckProgram,
Prolog, Epilog), its own expectations and a root-only state directory,
before the slurm.conf that names the program; other hosts get none of it; a converged cluster gets no command;
a cluster that turns the check off loses it everywhere. The program itself is tests/health's business."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from deploy.fakedeploy import SimCluster, dump
from deploy.simhost import Sim

from clusterforge.engine import ops
from clusterforge.health.expect import EXPECTATIONS_PATH, STATE_DIR
from clusterforge.model.settings import EPILOG_PROGRAM, HEALTH_PROGRAM, PROLOG_PROGRAM, REBOOT_PROGRAM
from clusterforge.render.programs import HEALTH, health_files
from clusterforge.render.health import OLD_PROGRAM
from clusterforge.roles.health import OLD_LIBRARY

SOURCE = Path(__file__).resolve().parents[2] / "src" / "clusterforge"
NODES = ("gpu01", "gpu02", "gpu03", "gpu04")


def test_every_compute_node_gets_the_check_before_slurm_conf_names_it_and_nothing_else_does(tmp_path):
    cluster = SimCluster(tmp_path / "sim")
    first = cluster.deploy()
    assert first.returncode == 0, dump(first)
    sims = first.sims
    assert set(health_files()) >= {"health/program.py", "health/parse.py", "health/xid.py", "slurm/drains.py",
                                   "health/expect.py", "health/probes.py"}
    for node in NODES:
        sim = sims[node]
        with zipfile.ZipFile(io.BytesIO(sim.content(HEALTH))) as program:
            assert sorted(program.namelist()) == [f"clusterforge_health/{m}" for m in health_files()]
            for module in health_files():
                assert program.read(f"clusterforge_health/{module}") == (SOURCE / module).read_bytes()
        for path, argv in ((HEALTH_PROGRAM, "sys.argv[1:] or ['check']"), (PROLOG_PROGRAM, "['prolog']"),
                           (EPILOG_PROGRAM, "['epilog']"), (REBOOT_PROGRAM, "['reboot', *sys.argv[1:]]")):
            assert sim.files[path]["mode"] == "755"
            assert f"program = os.open({HEALTH!r}, os.O_RDONLY)\nsys.path.insert(0, f\"/proc/self/fd/{{program}}\")\n" \
                "from clusterforge_health.health.program import main".encode() in sim.content(path)
            assert f"sys.exit(main({argv}))".encode() in sim.content(path)
        assert json.loads(sim.content(EXPECTATIONS_PATH))["node"] == node
        assert sim.dirs[STATE_DIR]["mode"] == "700"
        assert "python3" in sim.packages
        order = [c for h, c in first.order if h == node]
        # Each renamed into place (written beside, then moved over), the program before its launchers.
        placed = [order.index(f"mv -f {path}{ops.STAGED} {path}")
                  for path in (HEALTH, HEALTH_PROGRAM, PROLOG_PROGRAM, EPILOG_PROGRAM, REBOOT_PROGRAM)]
        assert placed == sorted(placed) and placed[-1] < order.index("upload /etc/slurm/slurm.conf")
    for host in ("ctl", "login1"):
        assert HEALTH_PROGRAM not in sims[host].files and EXPECTATIONS_PATH not in sims[host].files
    conf = sims["ctl"].content("/etc/slurm/slurm.conf").decode()
    assert f"HealthCheckProgram={HEALTH_PROGRAM}" in conf
    assert f"Prolog={PROLOG_PROGRAM}\n" in conf and f"Epilog={EPILOG_PROGRAM}\n" in conf
    assert f"RebootProgram={REBOOT_PROGRAM}\n" in conf
    assert "nohold_on_prolog_fail" in conf

    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    assert {h: s.events for h, s in again.sims.items() if s.events} == {} and again.operations() == []

    cluster.set_inventory(extra="health=Health(job_checks=False)")
    periodic_only = cluster.deploy()
    assert periodic_only.returncode == 0, dump(periodic_only)
    for node in NODES:
        files = periodic_only.sims[node].files
        assert HEALTH_PROGRAM in files and PROLOG_PROGRAM not in files and EPILOG_PROGRAM not in files
    conf = periodic_only.sims["ctl"].content("/etc/slurm/slurm.conf").decode()
    assert "Prolog=" not in conf and "Epilog=" not in conf and "nohold_on_prolog_fail" not in conf
    # Removed only once the slurm.conf that no longer names them is applied: a job starting meanwhile would fail a
    # prolog that is not there, and Slurm would drain the node for it.
    order = [c for h, c in periodic_only.order if h == "gpu01"]
    assert order.index("upload /etc/slurm/slurm.conf") < next(i for i, c in enumerate(order) if c.startswith("rm") and PROLOG_PROGRAM in c)

    cluster.set_inventory(extra="health=Health(enabled=False)")
    off = cluster.deploy()
    assert off.returncode == 0, dump(off)
    for node in NODES:
        files = off.sims[node].files
        assert not {HEALTH_PROGRAM, PROLOG_PROGRAM, EPILOG_PROGRAM, REBOOT_PROGRAM, EXPECTATIONS_PATH} & set(files)
        assert HEALTH not in files
    assert "HealthCheckProgram" not in off.sims["ctl"].content("/etc/slurm/slurm.conf").decode()


def test_a_node_with_an_older_checks_layout_gets_the_new_file_and_loses_the_old_ones_once_the_launchers_use_it(
        tmp_path):
    """A node deployed when the program was shipped module by module, or as the health package alone in
    clusterforge-health.pyz: the new file is written under its own name first, the launchers switch to it, then the
    old directory and file go; a second run has nothing to do."""
    cluster = SimCluster(tmp_path / "sim")
    assert (first := cluster.deploy()).returncode == 0, dump(first)
    path = cluster.directory / "gpu01.json"
    sim = Sim.load(path)
    sim.dirs[OLD_LIBRARY] = {"user": "root", "group": "root", "mode": "755"}
    for module in (SOURCE / "health").glob("*.py"):
        sim.put(f"{OLD_LIBRARY}/{module.name}", module.read_bytes())
    sim.put(OLD_PROGRAM, b"PK the health package alone")
    sim.save(path)
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    gpu01 = again.sims["gpu01"]
    assert not any(p == OLD_LIBRARY or p.startswith(OLD_LIBRARY + "/") for p in (*gpu01.files, *gpu01.dirs))
    assert OLD_PROGRAM not in gpu01.files
    assert again.events("gpu01") == [f"rm -rf {OLD_LIBRARY}", f"rm -f {OLD_PROGRAM}"], again.events("gpu01")
    assert all(not again.events(n) for n in NODES[1:])
    assert not (quiet := cluster.deploy()).events("gpu01"), dump(quiet)
