"""The node health check through the whole deploy on simulated hosts: every compute node gets the health package
as it is in clusterforge, the launchers slurm.conf names (HealthCheckProgram, Prolog, Epilog), its own expectations and a root-only state directory,
before the slurm.conf that names the program; other hosts get none of it; a converged cluster gets no command;
a cluster that turns the check off loses it everywhere. The program itself is tests/health's business."""

from __future__ import annotations

import json
from pathlib import Path

from deploy.fakedeploy import SimCluster, dump

from clusterforge.health.expect import EXPECTATIONS_PATH, STATE_DIR
from clusterforge.model.settings import EPILOG_PROGRAM, HEALTH_PROGRAM, PROLOG_PROGRAM
from clusterforge.roles.health import HEALTH_LIB, HEALTH_MODULES

SOURCE = Path(__file__).resolve().parents[2] / "src" / "clusterforge" / "health"
NODES = ("gpu01", "gpu02", "gpu03", "gpu04")


def test_every_compute_node_gets_the_check_before_slurm_conf_names_it_and_nothing_else_does(tmp_path):
    cluster = SimCluster(tmp_path / "sim")
    first = cluster.deploy()
    assert first.returncode == 0, dump(first)
    sims = first.sims
    assert set(HEALTH_MODULES) >= {"program.py", "parse.py", "xid.py", "drains.py", "expect.py", "probes.py"}
    for node in NODES:
        sim = sims[node]
        for module in HEALTH_MODULES:
            assert sim.content(f"{HEALTH_LIB}/{module}") == (SOURCE / module).read_bytes()
        for path, argv in ((HEALTH_PROGRAM, "sys.argv[1:] or ['check']"), (PROLOG_PROGRAM, "['prolog']"),
                           (EPILOG_PROGRAM, "['epilog']")):
            assert sim.files[path]["mode"] == "755"
            assert b"from clusterforge_health.program import main" in sim.content(path)
            assert f"sys.exit(main({argv}))".encode() in sim.content(path)
        assert json.loads(sim.content(EXPECTATIONS_PATH))["node"] == node
        assert sim.dirs[STATE_DIR]["mode"] == "700"
        assert "python3" in sim.packages
        order = [c for h, c in first.order if h == node]
        for path in (HEALTH_PROGRAM, PROLOG_PROGRAM, EPILOG_PROGRAM):
            assert order.index(f"upload {path}") < order.index("upload /etc/slurm/slurm.conf")
    for host in ("ctl", "login1"):
        assert HEALTH_PROGRAM not in sims[host].files and EXPECTATIONS_PATH not in sims[host].files
    conf = sims["ctl"].content("/etc/slurm/slurm.conf").decode()
    assert f"HealthCheckProgram={HEALTH_PROGRAM}" in conf
    assert f"Prolog={PROLOG_PROGRAM}\n" in conf and f"Epilog={EPILOG_PROGRAM}\n" in conf
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
        assert not {HEALTH_PROGRAM, PROLOG_PROGRAM, EPILOG_PROGRAM, EXPECTATIONS_PATH} & set(files)
        assert not any(path.startswith(HEALTH_LIB + "/") for path in files)
    assert "HealthCheckProgram" not in off.sims["ctl"].content("/etc/slurm/slurm.conf").decode()
