"""The admission gate through the whole deploy on simulated hosts (roles/gate.py): a new node is held before its
slurmd first starts, nodes in service when admission is turned on are recorded, not held, the gate's program and
service run on the controller, restarted only when they change, and turning admission off takes them all away."""

from __future__ import annotations

import io
import json
import zipfile

from clusters import gpu_profile, small_cluster
from deploy.fakedeploy import FIVE_NODES, SimCluster, dump
from deploy.steps import footprint

from clusterforge.engine.state import HostState, spec
from clusterforge.model import Admission, Nodes, Programs, resolve
from clusterforge.render import gate as render
from clusterforge.render.programs import GATE

ADMISSION = ('profiles=(gpu_profile(admission=Admission(programs=Programs(bin_dir="/opt/cf"), '
             'tests=("dcgm", "allreduce"))),)')
HOLD = "scontrol create reservation ReservationName=cf-gate-new-{node} "


def holds(run) -> list[str]:
    """The nodes held in this run: by the controller, in one command, and by no other host."""
    made = [node for node in ("gpu01", "gpu02", "gpu03", "gpu04", "gpu05") if run.ran("ctl", HOLD.format(node=node))]
    assert sum("create reservation" in e for sim in run.sims.values() for e in sim.events) == (1 if made else 0)
    return made


def test_a_first_deploy_holds_every_node_before_its_slurmd_starts_and_runs_the_gate(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11", auth="slurm", extra=ADMISSION)
    first = cluster.deploy()
    assert first.returncode == 0, dump(first)
    assert holds(first) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    order = [f"{h} {c}" for h, c in first.order]
    for node in ("gpu01", "gpu02", "gpu03", "gpu04"):
        held = next(i for i, c in enumerate(order) if c.startswith("ctl ") and HOLD.format(node=node) in c)
        assert order.index("ctl systemctl start slurmctld.service") < held
        assert held < order.index(f"{node} systemctl start slurmd.service"), node
    ctl = first.sims["ctl"]
    assert ctl.units[render.UNIT] == {"active": True, "enabled": True}
    with zipfile.ZipFile(io.BytesIO(ctl.content(GATE))) as program:
        assert "clusterforge_gate/gate/passes.py" in program.namelist()
    plan = json.loads(ctl.content("/etc/clusterforge/admission.json"))
    assert sorted(plan["nodes"]) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert [t["name"] for t in plan["nodes"]["gpu01"]["tests"]] == ["dcgm", "allreduce"]
    assert not any(render.UNIT in c for h, c in first.order if h != "ctl")
    # The gate's runs' directory, root's alone on each node before any job of a person's runs there.
    runs = {"user": "root", "group": "root", "mode": "700"}
    assert all(first.sims[n].dirs["/var/lib/clusterforge/gate-runs"] == runs
               for n in ("gpu01", "gpu02", "gpu03", "gpu04"))
    # Holds made are not asked for again; nothing else to do: a quiet run.
    again = cluster.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_nodes_in_service_when_admission_is_turned_on_are_recorded_and_a_node_added_then_is_held(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11", auth="slurm")
    assert (first := cluster.deploy()).returncode == 0, dump(first)
    assert not first.ran("ctl", "cf-gate") and render.UNIT not in first.sims["ctl"].units
    cluster.set_inventory(version="24.11", auth="slurm", extra=ADMISSION)
    turned_on = cluster.deploy()
    assert turned_on.returncode == 0, dump(turned_on)
    assert holds(turned_on) == []
    ctl = turned_on.sims["ctl"]
    for node in ("gpu01", "gpu04"):
        assert json.loads(ctl.content(render.admitted_path(node))) == {"how": "in service before the gate",
                                                                        "node": node}
    # The gate's program changes nothing else of the running cluster: no Slurm daemon restarts.
    assert not [c for h, c in turned_on.order if c.startswith("systemctl restart slurm")], turned_on.order
    cluster.set_inventory(version="24.11", auth="slurm", extra=f"{ADMISSION}, {FIVE_NODES}")
    grown = cluster.deploy()
    assert grown.returncode == 0, dump(grown)
    assert holds(grown) == ["gpu05"]
    order = [f"{h} {c}" for h, c in grown.order]
    held = next(i for i, c in enumerate(order) if HOLD.format(node="gpu05") in c)
    assert held < order.index("gpu05 systemctl start slurmd.service")
    assert render.admitted_path("gpu05") not in grown.sims["ctl"].files
    # The plan that lists it is there before its hold: the running gate releases a held node its plan lacks.
    planned = [i for i, c in enumerate(order)
               if c.startswith("ctl mv ") and c.endswith(" /etc/clusterforge/admission.json")]
    assert planned and planned[0] < held, [c for c in order if "admission" in c or "reservation" in c]
    assert "gpu05" in json.loads(grown.sims["ctl"].content("/etc/clusterforge/admission.json"))["nodes"]
    # The plan grew: the gate reads it at its next pass, it is not restarted for it.
    assert not grown.ran("ctl", f"systemctl restart {render.UNIT}")
    quiet = cluster.deploy()
    assert quiet.operations() == [], dump(quiet)


def test_a_deploy_killed_before_the_hold_holds_the_node_on_the_next_run(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11", auth="slurm", extra=ADMISSION)
    assert (first := cluster.deploy()).returncode == 0, dump(first)
    cluster.set_inventory(version="24.11", auth="slurm", extra=f"{ADMISSION}, {FIVE_NODES}")
    # slurmctld refuses the hold (or the run is killed there): the node's run stops before its slurmd starts, whatever
    # the other hosts go on with.
    stopped = cluster.deploy(fail="ctl:" + HOLD.format(node="gpu05"))
    assert stopped.returncode != 0
    assert "gpu05: its hold cf-gate-new-gpu05 could not be made on ctl" in stopped.output, dump(stopped)
    assert not stopped.ran("gpu05", "systemctl start slurmd.service")
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    assert holds(again) == ["gpu05"]
    assert render.admitted_path("gpu05") not in again.sims["ctl"].files


def test_turning_admission_off_stops_the_gate_deletes_its_holds_and_removes_its_files(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11", auth="slurm", extra=ADMISSION)
    assert (first := cluster.deploy()).returncode == 0, dump(first)
    cluster.set_inventory(version="24.11", auth="slurm")
    off = cluster.deploy()
    assert off.returncode == 0, dump(off)
    ctl = off.sims["ctl"]
    assert ctl.units[render.UNIT] == {"active": False, "enabled": False}
    assert off.ran("ctl", "scontrol delete ReservationName=\"$r\"")
    for path in (GATE, render.LAUNCHER, render.UNIT_PATH, "/etc/clusterforge/admission.json"):
        assert path not in ctl.files, path
    assert cluster.deploy().operations() == []


def test_an_admitted_node_back_installed_anew_is_held_as_repaired_before_its_slurmd_starts(tmp_path):
    # A node reimaged after an RMA: the controller admitted it once, the machine keeps nothing of it. Before, it came
    # back unheld and took users' jobs untested.
    cluster = SimCluster(tmp_path / "sim", version="24.11", auth="slurm", extra=ADMISSION)
    assert (first := cluster.deploy()).returncode == 0, dump(first)
    ctl = first.sims["ctl"]
    for node in ("gpu01", "gpu02"):  # what the gate's pass writes once a node passed
        ctl.files[render.admitted_path(node)] = {"content": "", "user": "root", "group": "root", "mode": "644"}
    ctl.save(cluster.directory / "ctl.json")
    (cluster.directory / "gpu02.json").unlink()  # installed anew
    plan = cluster.plan()
    assert "gpu02: admitted before, back installed anew, held in cf-gate-repaired-gpu02 until the gate's tests " \
           "pass" in plan.output, dump(plan)
    back = cluster.deploy()
    assert back.returncode == 0, dump(back)
    assert back.ran("ctl", "scontrol create reservation ReservationName=cf-gate-repaired-gpu02 ")
    assert not any(back.ran("ctl", f"ReservationName=cf-gate-{cause}-{node} ") for cause in ("new", "repaired")
                   for node in ("gpu01", "gpu03", "gpu04"))
    order = [f"{h} {c}" for h, c in back.order]
    held = next(i for i, c in enumerate(order) if "cf-gate-repaired-gpu02" in c)
    assert held < order.index("gpu02 systemctl start slurmd.service")
    assert back.sims["gpu02"].content(render.hold_path("gpu02")) == b"cf-gate-repaired-gpu02\n"
    again = cluster.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_no_host_names_a_nodes_record_or_note_and_each_nodes_hold_is_still_decided_by_them(tmp_path):
    # Every host's state read named every node's record and hold note: a read that grew with the nodes (172 KiB of
    # command a host at 1,000 of them, past the 128 KiB of one argument sshd hands the shell), and a run with their
    # square (issue 50).
    cluster = SimCluster(tmp_path / "sim", version="24.11", auth="slurm", extra=ADMISSION)
    assert (first := cluster.deploy()).returncode == 0, dump(first)
    ctl, gpu01 = first.sims["ctl"], first.sims["gpu01"]
    ctl.files[render.admitted_path("gpu01")] = {"content": "", "user": "root", "group": "root", "mode": "644"}
    ctl.save(cluster.directory / "ctl.json")
    del gpu01.files[render.hold_path("gpu01")]  # the gate passed it: the controller's record alone keeps it unheld
    gpu01.save(cluster.directory / "gpu01.json")
    cluster.set_inventory(version="24.11", auth="slurm", extra=f"{ADMISSION}, {FIVE_NODES}")
    nodes = ("gpu01", "gpu02", "gpu03", "gpu04", "gpu05")
    named = [*(render.admitted_path(n) for n in nodes), *(render.hold_path(n) for n in nodes)]
    grown = cluster.deploy(slow=dict.fromkeys(named, 0))  # each command naming one is logged, with its host
    assert grown.returncode == 0, dump(grown)
    assert holds(grown) == ["gpu05"]
    assert not any(grown.ran("ctl", render.admitted_path(n)) for n in nodes)
    # gpu05's note, written by gpu05 once its hold is made; no state read names any.
    assert {(host, text) for _, host, text in grown.reads} == {("gpu05", render.hold_path("gpu05"))}, grown.reads
    assert grown.sims["gpu05"].content(render.hold_path("gpu05")) == b"cf-gate-new-gpu05\n"
    quiet = cluster.deploy()
    assert quiet.operations() == [], dump(quiet)


def with_admission(nodes: int):
    admission = Admission(programs=Programs(bin_dir="/opt/cf"), tests=("dcgm",))
    return resolve(small_cluster(slurm_version="24.11", auth="slurm", profiles=(gpu_profile(admission=admission),),
                                 nodes=(Nodes(f"gpu[001-{nodes:03d}]", address=f"10.9.1.[1-{nodes}]", profile="gpu",
                                              leaf="leaf1"),)))


def test_each_hosts_state_read_is_the_same_command_however_many_nodes_have_admission():
    few, many = with_admission(4), with_admission(200)
    for groups in (("controller", "database"), ("compute",), ("login",)):
        assert HostState().command(**spec(footprint(few, groups), plan=False)) == \
            HostState().command(**spec(footprint(many, groups), plan=False)), groups
