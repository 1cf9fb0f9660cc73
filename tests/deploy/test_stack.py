"""The pinned stack through the whole deploy on simulated hosts: apt's preferences are in place before any package
is installed, each GPU node gets its profile's stack at exactly the inventory's versions with its daemons running,
every pinned package is held once installed, a converged cluster gets no command, a new driver version moves the
held packages on drained nodes without restarting their GPU daemons (the reboot into the new driver starts them),
and a cluster that drops the stack releases exactly the holds clusterforge made. apt itself is simulated: its pinning is proven on the test cluster
(tests/e2e)."""

from __future__ import annotations

from deploy.fakedeploy import SimCluster, dump
from deploy.simhost import Sim
from deploy.test_deploy_flow import controller_holds

from clusterforge.roles.stack import NCCL_CONF, PREFERENCES, UNATTENDED

NODES = ("gpu01", "gpu02", "gpu03", "gpu04")
OLD, NEW = "550.163.01-1", "550.172.05-1"
GPU_PACKAGES = ("cuda-drivers-550", "nvidia-fabricmanager-550", "nvidia-persistenced")


def stack(driver: str, slurm: str = "22.05.1-1") -> str:
    return (f'profiles=(gpu_profile(nvswitch=True, hcas=("mlx5_0", "mlx5_1"), nccl=Nccl(ib_hca=("mlx5_0:1",))),), '
            f'stack=Stack(slurm="{slurm}", gpu=GpuStack(driver="{driver}", fabric_manager="{driver}", '
            f'persistenced="{driver}"))')


def test_the_stack_is_pinned_before_any_install_installed_exactly_held_and_then_left_alone(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=stack(OLD))
    first = cluster.deploy()
    assert first.returncode == 0, dump(first)
    sims = first.sims
    for host in ("ctl", "login1", *NODES):
        order = [c for h, c in first.order if h == host]
        installs = [i for i, c in enumerate(order) if "apt-get install" in c]
        assert order.index(f"upload {PREFERENCES}") < installs[0], host
        assert "Pin: version 22.05.1-1" in sims[host].content(PREFERENCES).decode()
        assert "slurm-client" in sims[host].held and f"{UNATTENDED}" in sims[host].files
    for node in NODES:
        sim = sims[node]
        assert {p: sim.versions[p] for p in GPU_PACKAGES} == dict.fromkeys(GPU_PACKAGES, OLD)
        installs = [c for h, c in first.order if h == node and "apt-get install" in c]
        assert len(installs) == 1 and f"cuda-drivers-550={OLD}" in installs[0] and "slurmd" in installs[0], \
            "the GPU stack comes in the node's one apt transaction"
        started = first.order.index((node, "systemctl start nvidia-fabricmanager.service"))
        assert first.order.index((node, installs[0])) < started
        assert set(GPU_PACKAGES) | {"slurmd", "slurm-client"} <= set(sim.held)
        assert sim.units["nvidia-fabricmanager.service"] == {"active": True, "enabled": True}
        assert sim.units["nvidia-persistenced.service"] == {"active": True, "enabled": True}
        assert sim.content(NCCL_CONF).decode().endswith("NCCL_IB_HCA==mlx5_0:1\n")
        conf = sim.content("/etc/systemd/system/slurmd.service.d/clusterforge-gpus.conf").decode()
        assert "Requires=nvidia-fabricmanager.service" in conf
    for host in ("ctl", "login1"):
        assert not set(GPU_PACKAGES) & set(sims[host].packages)
        assert "cuda-drivers" not in sims[host].content(PREFERENCES).decode()

    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    assert {h: s.events for h, s in again.sims.items() if s.events} == {} and again.operations() == []

    cluster.set_inventory(extra=stack(NEW))
    moved = cluster.deploy()
    assert moved.returncode == 0, dump(moved)
    for node in NODES:
        sim = moved.sims[node]
        assert {p: sim.versions[p] for p in GPU_PACKAGES} == dict.fromkeys(GPU_PACKAGES, NEW)
        install = next(e for e in sim.events if "apt-get install" in e)
        assert "--allow-change-held-packages" in install and f"cuda-drivers-550={NEW}" in install
        # Under the old kernel module a newer fabric manager refuses to start, and slurmd, which requires it, would
        # stop with it: the node's reboot into the new driver starts them, not the run.
        assert not moved.ran(node, "systemctl restart nvidia-fabricmanager.service")
        assert not moved.ran(node, "systemctl restart nvidia-persistenced.service")
        assert not moved.ran(node, "systemctl restart slurmd")
        assert set(GPU_PACKAGES) <= set(sim.held)
    assert not moved.sims["ctl"].events or not moved.ran("ctl", "apt-get install")

    cluster.set_inventory(extra='profiles=(gpu_profile(nvswitch=False),)')
    sims_before = cluster.sims()
    sims_before["gpu01"].held.append("linux-image-amd64")  # an admin's own hold
    sims_before["gpu01"].save(cluster.directory / "gpu01.json")
    dropped = cluster.deploy()
    assert dropped.returncode == 0, dump(dropped)
    for host, sim in dropped.sims.items():
        assert PREFERENCES not in sim.files and UNATTENDED not in sim.files, host
        assert NCCL_CONF not in sim.files
    assert dropped.sims["gpu01"].held == ["linux-image-amd64"]


def restarts(run, unit: str) -> list[tuple[int, str]]:
    """(position in the run's order, host) of every restart of ``unit``."""
    return [(i, h) for i, (h, c) in enumerate(run.order) if c == f"systemctl restart {unit}"]


def test_a_new_patch_release_moves_slurms_packages_and_restarts_the_daemons_in_slurms_order(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=stack(OLD))
    assert cluster.deploy().returncode == 0
    cluster.set_inventory(extra=stack(OLD, slurm="22.05.9-1"))
    plan = cluster.plan()
    assert "slurm-client: 22.05.1-1 -> 22.05.9-1" in plan.output and "Slurm's packages move to 22.05.9-1" \
        in plan.output, plan.output[-3000:]
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    for host, sim in run.sims.items():
        installs = [c for h, c in run.order if h == host and "apt-get install" in c]
        assert len(installs) == 1 and "slurm-client=22.05.9-1" in installs[0], host
        assert "--allow-change-held-packages" in installs[0], "Slurm's packages are held: the move lifts the hold"
        assert {p: v for p, v in sim.versions.items() if p.startswith("slurm")} == dict.fromkeys(
            [p for p in sim.versions if p.startswith("slurm")], "22.05.9-1"), host
        assert "slurm-client" in sim.held, "held again at the new version"
    dbd, ctld, slurmd = (restarts(run, f"{u}.service") for u in ("slurmdbd", "slurmctld", "slurmd"))
    assert [h for _, h in dbd] == ["ctl"] and [h for _, h in ctld] == ["ctl"]
    assert sorted(h for _, h in slurmd) == list(NODES)
    assert dbd[0][0] < ctld[0][0] < min(i for i, _ in slurmd), "slurmdbd, then slurmctld, then the nodes"
    again = cluster.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_a_move_interrupted_before_its_restarts_still_owes_them(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=stack(OLD))
    assert cluster.deploy().returncode == 0
    cluster.set_inventory(extra=stack(OLD, slurm="22.05.9-1"))
    broken = cluster.deploy(fail="*:systemctl restart")  # every host stopped at its first restart, after its apt
    assert broken.returncode != 0 and broken.sims["gpu01"].versions["slurmd"] == "22.05.9-1"
    assert broken.sims["gpu01"].units["slurmd.service"]["replaced"]
    run = cluster.deploy()  # nothing moves any more: the daemons still run the replaced executables
    assert run.returncode == 0, dump(run)
    assert not any("apt-get install" in c for _, c in run.order)
    assert [h for _, h in restarts(run, "slurmdbd.service")] == ["ctl"]
    assert [h for _, h in restarts(run, "slurmctld.service")] == ["ctl"]
    assert sorted(h for _, h in restarts(run, "slurmd.service")) == list(NODES)
    assert all("replaced" not in u for s in run.sims.values() for u in s.units.values())


def test_a_release_move_goes_through_and_a_partial_one_may_not_put_slurmd_ahead_of_slurmctld(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=stack(OLD))
    assert cluster.deploy().returncode == 0
    for host in ("gpu01", "gpu02", "gpu03", "gpu04", "login1"):  # what slurmctld (22.05) tells a host that asks
        path = cluster.directory / f"{host}.json"
        sim = Sim.load(path)
        sim.slurmctld = "22.05.1"
        sim.save(path)
    cluster.set_inventory("23.02", "munge", extra=stack(OLD, slurm="23.02.7-1"))
    ahead = cluster.deploy("--limit", "@fake/gpu01")
    assert ahead.returncode != 0
    assert "slurmd would run 23.02, ahead of slurmctld 22.05 on ctl" in ahead.output, ahead.output[-3000:]
    assert all(not s.events for s in ahead.sims.values())
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    assert all(s.versions["slurm-client"] == "23.02.7-1" for s in run.sims.values())
    library = "/usr/local/lib/clusterforge/pyxis-0.24.0-slurm-23.02/spank_pyxis.so"
    assert not any(library in s.files for s in run.sims.values()), "no containers in this cluster: no Pyxis"
    dbd, ctld = restarts(run, "slurmdbd.service"), restarts(run, "slurmctld.service")
    assert dbd and ctld and dbd[0][0] < ctld[0][0] < min(i for i, _ in restarts(run, "slurmd.service"))


def test_a_new_driver_waits_for_the_jobs_drains_moves_and_has_slurm_reboot_the_nodes(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=stack(OLD))
    assert cluster.deploy().returncode == 0
    controller_holds(cluster, jobs=["41 alice gpu02"])
    cluster.set_inventory(extra=stack(NEW))
    plan = cluster.plan()
    assert "gpu[01-04]: the GPU driver moves (550.172.05-1); the deploy drains them first" in plan.output, dump(plan)
    assert "stops while jobs run there: 41 alice gpu02" in plan.output
    assert f"cuda-drivers-550: {OLD} -> {NEW}" in plan.output

    stopped = cluster.deploy()
    assert stopped.returncode != 0
    assert "gpu[01-04]: the GPU driver moves, so they are drained ('cf:stack:driver moves to 550.172.05')" in \
        stopped.output and "jobs still run there: 41 alice gpu02" in stopped.output
    assert "no job was killed" in stopped.output
    assert stopped.sims["ctl"].drained == dict.fromkeys(NODES, "cf:stack:driver moves to 550.172.05")
    assert not any("apt-get" in e for s in stopped.sims.values() for e in s.events)

    controller_holds(cluster, jobs=[])  # the job ended
    moved = cluster.deploy()
    assert moved.returncode == 0, dump(moved)
    assert all(moved.sims[n].versions["cuda-drivers-550"] == NEW for n in NODES)
    assert not any(moved.ran(n, f"systemctl restart {unit}") for n in NODES
                   for unit in ("nvidia-fabricmanager.service", "nvidia-persistenced.service", "slurmd"))
    reboot = [e for e in moved.sims["ctl"].events if "scontrol reboot ASAP nextstate=resume" in e]
    assert len(reboot) == 1 and all(n in reboot[0] for n in NODES)
    assert "reason='cf:stack:driver reboot into the new driver'" in reboot[0]
    ctl_order = [c for h, c in moved.order if h == "ctl"]
    # Last, after every node's packages moved; only the deploy's stamp of the host comes after it.
    after = ctl_order[ctl_order.index(reboot[0]) + 1:]
    assert all("/etc/clusterforge" in command for command in after), after

    # Interrupted before the reboot: the nodes are still drained for the move, and the next run reboots them. (The
    # run above did ask slurmctld for the reboot, which holds it now: a node whose reboot is asked is not asked again.)
    controller_holds(cluster, drained=dict.fromkeys(NODES, "cf:stack:driver moves to 550.172.05"))
    again = cluster.deploy()
    assert [e for e in again.sims["ctl"].events if "scontrol reboot" in e]
    assert not any("apt-get" in e for s in again.sims.values() for e in s.events)
    controller_holds(cluster, drained={"gpu01": "admin: fan"})  # Slurm resumed them after the reboot
    done = cluster.deploy()
    assert done.returncode == 0 and done.operations() == [], dump(done)


def test_a_driver_move_never_touches_a_node_someone_else_holds_and_stops_before_any_change(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=stack(OLD))
    assert cluster.deploy().returncode == 0
    controller_holds(cluster, drained={"gpu02": "RMA gpu3 (admin)"})
    cluster.set_inventory(extra=stack(NEW))
    stopped = cluster.deploy()
    assert stopped.returncode != 0
    assert ("gpu02: the GPU driver moves, but it is held by another: gpu02 'drained RMA gpu3 (admin)'. clusterforge "
            "neither moves a driver under someone else's hold nor reboots the node") in stopped.output, dump(stopped)
    assert "Nothing was changed on any host" in stopped.output
    assert "clusterforge roll --apply --reboot" in stopped.output
    assert stopped.sims["ctl"].drained == {"gpu02": "RMA gpu3 (admin)"}  # no other node drained either
    assert not any("apt-get" in e or "scontrol" in e for s in stopped.sims.values() for e in s.events)
    # Let go: the move goes through, the node drained, moved and rebooted as the others.
    controller_holds(cluster, drained={})
    moved = cluster.deploy()
    assert moved.returncode == 0, dump(moved)
    assert all(moved.sims[n].versions["cuda-drivers-550"] == NEW for n in NODES)


def test_a_driver_move_past_the_disruption_budget_stops_before_any_change_and_names_the_roll(tmp_path):
    five = 'nodes=(Nodes("gpu[01-05]", address="10.9.1.[1-5]", profile="gpu", leaf="leaf1"),), '
    cluster = SimCluster(tmp_path / "sim", extra=five + stack(OLD))
    assert cluster.deploy().returncode == 0
    cluster.set_inventory(extra=five + stack(NEW))
    said = ("gpu[01-05]: 5 nodes would go out of service at once (their GPU driver moves), more than this cluster's "
            "disruption budget of 4 (Cluster(disruption_budget=...)). Nothing was changed on any host. Move the driver "
            "in batches: clusterforge roll --apply --reboot --batch 4")
    plan = cluster.plan()
    assert f"the deploy would stop before any change: {said}" in " ".join(plan.output.split()), dump(plan)
    stopped = cluster.deploy()
    assert stopped.returncode != 0 and said in " ".join(stopped.output.split()), dump(stopped)
    assert stopped.sims["ctl"].drained == {}
    assert not any("apt-get" in e or "scontrol" in e for s in stopped.sims.values() for e in s.events)
    # A node already out of service is not taken out again: it does not count.
    controller_holds(cluster, drained={"gpu05": "cf:stack:driver moves to 550.172.05"})
    moved = cluster.deploy()
    assert moved.returncode == 0, dump(moved)
    assert all(moved.sims[f"gpu0{i}"].versions["cuda-drivers-550"] == NEW for i in range(1, 6))
    # The inventory's budget decides.
    cluster.set_inventory(extra=five + stack(OLD) + ", disruption_budget=5")
    assert cluster.deploy().returncode == 0


def dcgm(exporter: str | None, dcgm_version: str = "1:4.5.2-1") -> str:
    export = f', dcgm_exporter="{exporter}"' if exporter else ""
    return (f'profiles=(gpu_profile(),), stack=Stack(gpu=GpuStack(driver="{OLD}", dcgm="{dcgm_version}"'
            f'{export}))')


def test_the_dcgm_exporter_reads_nvidia_dcgm_through_its_drop_in_and_moves_alone(tmp_path):
    dropin_path = "/etc/systemd/system/nvidia-dcgm-exporter.service.d/clusterforge.conf"
    cluster = SimCluster(tmp_path / "sim", extra=dcgm("4.8.1-1"))
    first = cluster.deploy()
    assert first.returncode == 0, dump(first)
    for node in NODES:
        sim, order = first.sims[node], [c for h, c in first.order if h == node]
        assert sim.versions["datacenter-gpu-manager-4-core"] == "1:4.5.2-1"
        assert sim.versions["datacenter-gpu-manager-exporter"] == "4.8.1-1"
        assert {"datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary",
                "datacenter-gpu-manager-exporter"} <= set(sim.held)
        dropin = sim.content(dropin_path).decode()
        assert "Environment=DCGM_REMOTE_HOSTENGINE_INFO=localhost:5555\n" in dropin
        assert "Requires=nvidia-dcgm.service\n" in dropin
        # Written and read by systemd before the exporter starts, which comes after its host engine.
        started = order.index("systemctl start nvidia-dcgm-exporter.service")
        assert order.index(f"upload {dropin_path}") < order.index("systemctl daemon-reload") < started
        assert order.index("systemctl start nvidia-dcgm.service") < started
        assert sim.units["nvidia-dcgm-exporter.service"] == {"active": True, "enabled": True}
    assert "datacenter-gpu-manager-exporter" not in first.sims["ctl"].packages

    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    assert again.operations() == []

    cluster.set_inventory(extra=dcgm("4.8.2-1"))
    moved = cluster.deploy()
    assert moved.returncode == 0, dump(moved)
    for node in NODES:
        assert moved.sims[node].versions["datacenter-gpu-manager-exporter"] == "4.8.2-1"
        assert moved.ran(node, "systemctl restart nvidia-dcgm-exporter.service")
        assert not moved.ran(node, "systemctl restart nvidia-dcgm.service")
        assert not moved.ran(node, "systemctl daemon-reload"), "the drop-in did not change"

    cluster.set_inventory(extra=dcgm(None))
    dropped = cluster.deploy()
    assert dropped.returncode == 0, dump(dropped)
    for node in NODES:
        sim = dropped.sims[node]
        assert dropin_path not in sim.files
        assert sim.units["nvidia-dcgm-exporter.service"] == {"active": False, "enabled": False}
        assert sim.units["nvidia-dcgm.service"] == {"active": True, "enabled": True}
        assert "datacenter-gpu-manager-exporter" not in sim.held

    # Back, the same drop-in as before its removal: systemd reads it again before the exporter starts.
    cluster.set_inventory(extra=dcgm("4.8.2-1"))
    back = cluster.deploy()
    assert back.returncode == 0, dump(back)
    for node in NODES:
        order = [c for h, c in back.order if h == node]
        assert order.index("systemctl daemon-reload") < order.index("systemctl start nvidia-dcgm-exporter.service")
