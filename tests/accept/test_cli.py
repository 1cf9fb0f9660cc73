"""`clusterforge accept`'s mistakes, each exit 2 with what and where, before any host is reached."""

from __future__ import annotations

import json

from click.testing import CliRunner
from golden_cases import PROD, prod_edited

from clusterforge.admission import records
from clusterforge.cli import cli

ADMISSION = '    admission=Admission(programs=Programs(image=ACCEPTANCE_IMAGE)),\n'


def test_an_inventory_without_admission_says_what_to_add(tmp_path):
    inventory = prod_edited(tmp_path, (ADMISSION, ""))
    result = CliRunner().invoke(cli, ["accept", str(inventory), "--dry-run"])
    assert result.exit_code == 2
    assert f"{inventory}: no profile has admission: give the GPU profiles admission=Admission(" in result.output


def test_limit_naming_a_node_without_admission_is_refused():
    result = CliRunner().invoke(cli, ["accept", str(PROD), "--limit", "gpu-node-[031-033]", "--dry-run"])
    assert result.exit_code == 2
    assert f"--limit: not hosts or groups of {PROD}: gpu-node-033" in result.output


def test_a_limit_that_is_not_a_hostlist_is_refused():
    result = CliRunner().invoke(cli, ["accept", str(PROD), "--limit", "gpu-node-[031-", "--dry-run"])
    assert result.exit_code == 2 and "is not a valid hostlist" in result.output


LIMIT = "gpu-node-[001-004],gpu-node-[009-012]"   # four nodes of each of two leaves


class StandInConnections:
    """reach.ssh.Connections' interface, its runners answered by the Slurm stand-in (no SSH here)."""

    standin = None

    def __init__(self, targets):
        self.names = [t.name for t in targets]

    def runner(self, name):
        return self.standin.controller if name == "slurm-ctl01" else self.standin.node(name)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.close()


def cluster(tmp_path, monkeypatch, results):
    import json

    from accept.cluster import Cluster
    from slurm_standin import Partition

    from clusterforge.model.rules.times import slurm_time_seconds
    from clusterforge.reach import ssh
    from clusterforge.reach.hosts import load

    file = tmp_path / "home" / ".clusterforge-testbed" / "accept.json"
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps(results))
    # Slurm's partitions as the inventory configures them (slurm.conf), each job naming one of them
    valid, _ = load(PROD)
    partitions = {p.spec.name: Partition(list(p.nodes), p.spec.default, slurm_time_seconds(p.spec.max_time) // 60)
                  for p in valid.partitions}
    StandInConnections.standin = Cluster.of([n.name for n in valid.nodes], tmp_path, partitions)
    monkeypatch.setattr(ssh, "Connections", StandInConnections)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return StandInConnections.standin


def test_accept_on_the_example_inventory_finds_the_slow_node_and_keeps_its_records(tmp_path, monkeypatch):
    standin = cluster(tmp_path, monkeypatch, {"gpu-node-010": {"allreduce": 300}})
    # Without ib_write_bw: its script waits 2 s for each HCA's server, 16 s a node here (its run: tests/admission).
    inventory = prod_edited(tmp_path, (ADMISSION, ADMISSION.replace(
        ")),", '), tests=("dcgm", "allreduce", "allreduce_multi")),')))
    result = CliRunner().invoke(cli, ["accept", str(inventory), "--limit", LIMIT])
    assert result.exit_code == 1, result.output
    # Before it connects, whom it waits for: on stderr, with its time as every line of a run.
    assert result.stderr.split(" ", 2)[2].startswith("accept: connecting to the controller slurm-ctl01 (10.0.0.10)\n")
    lines = result.output.splitlines()
    assert " round 1: single-node tests on 8 nodes: 16 runs, 15 passed; failed: gpu-node-010 (allreduce 300 GB/s < " \
           "460)" in "\n".join(lines)
    # Run once more alone before its drain: slow again.
    assert any(" round 2: confirming gpu-node-010 alone (allreduce): 1 run, 0 passed; failed: gpu-node-010 (allreduce "
               "300 GB/s < 460)" in line for line in lines)
    assert any(" round 3: allreduce_multi across 2 leaves: 2 runs, 2 passed" in line for line in lines)
    assert any(" round 4: allreduce_multi across the spine (7 nodes): 1 run, 1 passed" in line for line in lines)
    assert "gpu-node-010  FOUND   cf:accept:allreduce 300 GB/s < 460" in lines
    assert "  confirmed: gpu-node-010 failed allreduce alone, failed again alone: slow" in lines
    assert lines[-1] == "findings (4 rounds, exit 1)"
    assert standin.state("gpu-node-010") == ("drained", "cf:accept:allreduce 300 GB/s < 460")
    assert all(n in LIMIT or n.startswith(("gpu-node-00", "gpu-node-01")) for j in standin.submitted for n in j.nodes)
    kept = tmp_path / "state" / "clusterforge" / "prod" / "records"
    assert sorted(p.name for p in kept.iterdir()) == [f"gpu-node-{i:03d}.jsonl" for i in (1, 2, 3, 4, 9, 10, 11, 12)]
    # and on the controller, beside the gate's, where the Slurm exporter reads them
    assert records.read_all(standin.controller_records) == records.read_all(kept)
    # The image's tools through Pyxis.
    script = next(j.script for j in standin.submitted if j.name == "cf-accept:allreduce")
    assert "--container-image=registry.example.org#hpc/acceptance:2026.11" in script


def test_accept_dry_run_json_lists_the_jobs_and_changes_nothing(tmp_path, monkeypatch):
    import json

    standin = cluster(tmp_path, monkeypatch, {})
    standin.drain("gpu-node-003", "RMA (admin)")
    result = CliRunner().invoke(cli, ["accept", str(PROD), "--limit", LIMIT, "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)  # the phase line on stderr only
    assert body["schema"] == 1
    assert result.stderr == "accept: connecting to the controller slurm-ctl01 (10.0.0.10)\n"
    assert body["left_alone"] == {"gpu-node-003": "drained, 'RMA (admin)'"}
    assert body["offline"] is False and body["not_known"] is None
    assert [r["what"] for r in body["rounds"]] == ["single-node tests on 7 nodes", "allreduce_multi across 2 leaves",
                                                   "allreduce_multi across the spine (7 nodes)"]
    assert body["rounds"][1]["jobs"][0]["nodes"] == ["gpu-node-001", "gpu-node-002", "gpu-node-004"]
    assert standin.slurm.jobs == {} and not (tmp_path / "state").exists() and not standin.controller_records.exists()


class NoConnections:
    """reach.ssh.Connections, refusing to be made: --offline reaches no host."""

    def __init__(self, targets):
        raise AssertionError(f"--offline connected to {[t.name for t in targets]}")


def dry_run_json(*args):
    result = CliRunner().invoke(cli, ["accept", str(PROD), "--limit", LIMIT, "--dry-run", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_offline_dry_run_plans_from_the_inventory_alone_and_says_what_it_could_not_know(tmp_path, monkeypatch):
    from clusterforge.reach import ssh

    cluster(tmp_path, monkeypatch, {})
    online = dry_run_json()
    monkeypatch.setattr(ssh, "Connections", NoConnections)
    offline = dry_run_json("--offline")
    assert offline["offline"] is True and offline["left_alone"] == {}
    assert offline["not_known"].startswith("offline: the controller was not asked, so which nodes are drained, down, "
                                           "busy or reserved is not known")
    # Every node idle on the controller: the same rounds and jobs as the plan the controller was asked for.
    assert [(r["what"], [j["nodes"] for j in r["jobs"]]) for r in offline["rounds"]] == \
        [(r["what"], [j["nodes"] for j in r["jobs"]]) for r in online["rounds"]]
    assert [r["what"] for r in offline["rounds"]] == ["single-node tests on 8 nodes", "allreduce_multi across 2 leaves",
                                                      "allreduce_multi across the spine (8 nodes)"]
    text = CliRunner().invoke(cli, ["accept", str(PROD), "--limit", LIMIT, "--dry-run", "--offline"])
    assert text.exit_code == 0 and text.stderr == "", text.output
    assert text.stdout.splitlines()[0] == offline["not_known"]
    assert "round 1: single-node tests on 8 nodes: " in text.stdout and "$ sbatch --parsable" in text.stdout


def test_offline_without_dry_run_is_refused_before_anything(monkeypatch):
    from clusterforge.reach import ssh

    monkeypatch.setattr(ssh, "Connections", NoConnections)
    result = CliRunner().invoke(cli, ["accept", str(PROD), "--offline"])
    assert result.exit_code == 2 and "--offline goes with --dry-run" in result.stderr and result.stdout == ""
