"""Configless Slurm (Cluster.configless): what each host keeps of the Slurm files, the drop-in that starts a compute
node's slurmd with --conf-server, what a configless node's slurmd owes, and the whole deploy on simulated hosts: a
move to configless removes the nodes' files once slurmd fetches them, a second run changes nothing, and a partition
change is one upload on the controller."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
from clusters import small_cluster
from deploy.fakedeploy import NEW_PARTITION, SimCluster, dump

from clusterforge.engine import ops
from clusterforge.engine.change import Change, Upload
from clusterforge.engine.run import DeployRun, Here
from clusterforge.engine.state import State
from clusterforge.model import Host, ValidCluster, resolve
from clusterforge.render import slurm_files as rendered
from clusterforge.restarts import Plan
from clusterforge.roles.daemons import SLURMD_CONFIGLESS, slurmd
from clusterforge.roles.slurm_change import FETCHED, applied_copy, fetched, fetched_only, fetching_plan, record_applied
from clusterforge.roles.slurm_change import slurm_files as slurm_files_step

VALID = resolve(small_cluster(configless=True, login=(Host("login1", address="10.9.0.7"),)))
NODES = ("gpu01", "gpu02", "gpu03", "gpu04")


def here_on(state: State, machine: str, valid: ValidCluster = VALID,
            others: dict[str, State] | None = None) -> tuple[Here, list[Change]]:
    """A host of a run that is not pyinfra's (as tests/deploy/test_changes.py's), the run's host states given."""
    found: list[Change] = []
    run = DeployRun(SimpleNamespace(inventory=(), active_hosts=frozenset()), valid)
    run.once("host states by name", lambda: {machine: state, **(others or {})})
    target = next(m for m in valid.machines if m.name == machine)

    def sink(here: Here, change: Change) -> None:
        found.append(replace(change, name=here.label(change.name)))

    return Here(run, SimpleNamespace(name=machine), target, state, sink), found


def uploads(found: list[Change]) -> list[str]:
    return [c.path for change in found for c in change.commands if isinstance(c, Upload)]


def test_the_controller_and_login_hosts_keep_the_files_and_a_compute_node_gets_none():
    for host in ("ctl", "login1"):
        here, found = here_on(State(), host)
        slurm_files_step(here)
        assert "/etc/slurm/slurm.conf" in uploads(found), host
    here, found = here_on(State(), "gpu01")
    slurm_files_step(here)
    assert uploads(found) == []


def test_files_an_earlier_deploy_left_on_a_compute_node_are_removed_by_their_own_step():
    left = State(paths={"/etc/slurm/slurm.conf": None, "/etc/slurm/gres.conf": None})  # type: ignore[dict-item]
    here, found = here_on(left, "gpu01")
    fetched_only(here)
    removals = [c for change in found for c in change.commands]
    assert removals == ["rm -f /etc/slurm/slurm.conf", "rm -f /etc/slurm/gres.conf"]
    here, found = here_on(left, "ctl")
    fetched_only(here)
    assert found == []


def test_slurmd_gets_the_configless_drop_in_and_restarts_for_it():
    here, found = here_on(State(), "gpu01")
    slurmd(here)
    dropin = next(c for c in found if any(isinstance(u, Upload) and u.path == SLURMD_CONFIGLESS for u in c.commands))
    text = next(u.content for u in dropin.commands if isinstance(u, Upload))
    assert 'Environment="SLURMD_OPTIONS=--conf-server 10.9.0.1:6817"' in text and "ConditionPathExists=\n" in text
    assert any("daemon-reload" in str(c) for change in found for c in change.commands)


def test_a_cluster_without_configless_writes_no_such_drop_in():
    valid = resolve(small_cluster())
    here, found = here_on(State(), "gpu01", valid)
    slurmd(here)
    assert SLURMD_CONFIGLESS not in uploads(found)


def _state_with_record(digest: str) -> State:
    return State(texts={ops.record_path(FETCHED): digest + "\n"})


def test_a_node_that_fetched_the_current_files_owes_nothing():
    assert fetching_plan(VALID, _state_with_record(fetched(rendered(VALID))), None) == Plan()


def test_a_node_that_fetched_what_the_controller_applied_owes_the_controllers_plan():
    before = dict(rendered(VALID))
    before["slurm.conf"] = before["slurm.conf"].replace("PartitionName=batch", "PartitionName=old")
    controller = State(texts={applied_copy(name): text for name, text in before.items() if text is not None})
    plan = fetching_plan(VALID, _state_with_record(fetched(before)), controller)
    assert plan.reconfigure and not plan.restart_slurmd


def test_a_node_whose_record_nobody_knows_restarts_slurmd_to_fetch_again():
    plan = fetching_plan(VALID, _state_with_record("0" * 64), State())
    assert plan.restart_slurmd and "fetch" in plan.reasons[0]


def test_a_configless_node_records_a_digest_and_drops_its_copies():
    copies = State(texts={applied_copy("slurm.conf"): "old\n"})
    here, found = here_on(copies, "gpu01", others={"ctl": State()})  # its change happens in this run
    record_applied(here)
    commands = [c for change in found for c in change.commands]
    assert commands == [ops.record_command(FETCHED, fetched(rendered(VALID))), f"rm -f {applied_copy('slurm.conf')}"]


CONFIGLESS = "configless=True"


@pytest.fixture
def moved(tmp_path) -> SimCluster:
    """A cluster deployed with local files on every host, then deployed again configless."""
    sim = SimCluster(tmp_path / "sim", version="24.11", auth="slurm")
    sim.version, sim.auth = "24.11", "slurm"
    assert (first := sim.deploy()).returncode == 0, dump(first)
    sim.set_inventory("24.11", "slurm", CONFIGLESS)
    run = sim.deploy()
    assert run.returncode == 0, dump(run)
    return sim


def test_a_move_to_configless_restarts_slurmd_with_its_drop_in_then_removes_the_local_files(moved):
    sims = moved.sims()
    for node in NODES:
        assert sims[node].content("/etc/slurm/slurm.conf") is None
        assert b"--conf-server 10.9.0.1:6817" in sims[node].content(SLURMD_CONFIGLESS)
    assert b"enable_configless" in sims["ctl"].content("/etc/slurm/slurm.conf")
    assert sims["login1"].content("/etc/slurm/slurm.conf") is not None


def test_configless_a_second_run_changes_nothing_and_a_partition_is_one_upload(moved):
    again = moved.deploy()
    assert again.returncode == 0, dump(again)
    assert {h: s.events for h, s in again.sims.items() if s.events} == {}, dump(again)
    moved.set_inventory("24.11", "slurm", f"{CONFIGLESS}, {NEW_PARTITION}")
    changed = moved.deploy()
    assert changed.returncode == 0, dump(changed)
    for node in NODES:
        assert not any("/etc/slurm/slurm.conf" in e for e in changed.events(node)), dump(changed)
        assert not changed.ran(node, "systemctl restart slurmd"), dump(changed)
    assert changed.ran("ctl", "scontrol reconfigure"), dump(changed)
    settled = moved.deploy()
    assert {h: s.events for h, s in settled.sims.items() if s.events} == {}, dump(settled)
