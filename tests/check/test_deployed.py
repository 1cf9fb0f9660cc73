"""`clusterforge check` and the deploys' stamps (check/deployed.py): each host's stamp against the inventory check is
given, and across the hosts, which clusterforge and which inventory deployed which. A host without a stamp, or
stamped from another inventory, is a finding; hosts deployed by several clusterforge versions are one; all hosts
deployed alike by this inventory are none."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from clusters import small_cluster

from clusterforge.check import deployed as deployed_check
from clusterforge.check import exit_status, report
from clusterforge.check.probes import Context, checks_for, perform
from clusterforge.model import Host, resolve
from clusterforge.render.stamp import PATH, Stamp, render
from clusterforge.slurm.commands import Answer

VALID = resolve(small_cluster(login=(Host("login1", address="10.9.0.7"),)))
HOSTS = ("ctl", "login1", "gpu01", "gpu02", "gpu03", "gpu04")
NOW = Stamp(clusterforge="0.1.dev7+gdef5678", inventory=VALID.inventory_digest, cluster="t",
            deployed_at="2025-06-02T08:00:00Z", deployed_by="alice", deployed_from="admin01")
OLDER = replace(NOW, clusterforge="0.1.dev5+gabc1234", deployed_at="2025-05-30T17:00:00Z", deployed_by="bob")
OTHER = replace(NOW, inventory="9" * 64, deployed_at="2025-06-01T12:00:00Z")


def host_reading(text: str | None):
    def run(command: str) -> Answer:
        assert command == deployed_check.read_command()
        return Answer(0, text or "", "")
    return run


def checked(held: dict[str, Stamp | str | None]) -> list:
    """Each host's deployed check on a host holding ``held`` (a stamp, a file's text, or nothing), then the row
    across them, as check_cluster gives them."""
    stamps: dict[str, Stamp | None] = {}
    outcomes = []
    for machine in VALID.machines:
        [check] = [c for c in checks_for(machine, VALID, smoke=False) if c.name == "deployed"]
        found = held[machine.name]
        text = render(found) if isinstance(found, Stamp) else found
        outcomes.append(perform(check, Context(VALID, machine, host_reading(text), stamps=stamps)))
    return [*outcomes, deployed_check.outcome(VALID, stamps)]


def findings(outcomes) -> list[str]:
    return [f"{o.host} {o.check}: {f.message}" for o in outcomes for f in o.findings]


def test_every_host_has_the_check():
    assert all(any(c.name == "deployed" for c in checks_for(m, VALID, smoke=False)) for m in VALID.machines)


def test_all_hosts_deployed_alike_by_this_inventory_is_no_finding():
    outcomes = checked(dict.fromkeys(HOSTS, NOW))
    assert findings(outcomes) == [] and exit_status(outcomes) == 0
    assert outcomes[0].detail == (f"clusterforge 0.1.dev7+gdef5678, inventory {VALID.inventory_digest[:12]} "
                                  "(this one), 2025-06-02T08:00:00Z by alice@admin01")
    assert (outcomes[-1].host, outcomes[-1].check, outcomes[-1].detail) == (
        "ctl", "deploys", (f"6 hosts: clusterforge 0.1.dev7+gdef5678, inventory {VALID.inventory_digest[:12]} "
                           "(this one)"))


def test_one_host_deployed_by_an_older_clusterforge_is_one_finding_across_the_hosts():
    outcomes = checked({**dict.fromkeys(HOSTS, NOW), "gpu03": OLDER})
    mine = VALID.inventory_digest[:12]
    assert findings(outcomes) == [
        ("ctl deploys: deployed by 2 clusterforge versions: 0.1.dev7+gdef5678 on gpu[01-02,04],login1,ctl; "
         "0.1.dev5+gabc1234 on gpu03: run apply to them all with one")]
    assert outcomes[-1].detail == (f"clusterforge 0.1.dev7+gdef5678, inventory {mine} (this one): "
                                   f"gpu[01-02,04],login1,ctl; clusterforge 0.1.dev5+gabc1234, inventory {mine} "
                                   "(this one): gpu03")
    assert exit_status(outcomes) == 1


def test_one_host_deployed_from_another_inventory_was_not_deployed_since_it_changed():
    outcomes = checked({**dict.fromkeys(HOSTS, NOW), "gpu02": OTHER})
    assert findings(outcomes) == [
        (f"gpu02 deployed: deployed from another inventory (999999999999) than this one "
         f"({VALID.inventory_digest[:12]}): not deployed since the inventory changed: run apply")]
    assert outcomes[-1].detail.endswith("; clusterforge 0.1.dev7+gdef5678, inventory 999999999999: gpu02")
    assert exit_status(outcomes) == 1


def test_a_host_without_a_stamp_and_one_with_a_broken_file_are_findings():
    outcomes = checked({**dict.fromkeys(HOSTS, NOW), "login1": None, "gpu04": '{"schema": 1}'})
    assert findings(outcomes) == [
        f"login1 deployed: no {PATH}: never deployed, or not since clusterforge stamps its deploys: run apply",
        (f"gpu04 deployed: {PATH} is not a stamp clusterforge wrote: without clusterforge, inventory, cluster, "
         "deployed_at, deployed_by, deployed_from")]
    assert outcomes[-1].detail.endswith("; no stamp: login1")
    assert "gpu04" not in outcomes[-1].detail


def test_the_table_and_the_json_carry_them():
    outcomes = checked({**dict.fromkeys(HOSTS, NOW), "gpu03": OLDER, "gpu02": OTHER, "login1": None})
    table = report.table(outcomes)
    assert "ctl     deploys   FINDING" in table and "gpu02   deployed  FINDING" in table
    assert table.endswith("3 findings:\n" + "\n".join(f"  {line}" for line in findings(outcomes))
                          + "\n\nfindings (exit 1)")
    document = json.loads(report.as_json("t", outcomes))
    assert document["schema"] == 1 and document["status"] == 1
    rows = {(c["host"], c["check"]): c for c in document["checks"]}
    assert rows[("ctl", "deploys")]["status"] == "FINDING"
    assert rows[("gpu03", "deployed")]["detail"].startswith("clusterforge 0.1.dev5+gabc1234, ")


@pytest.mark.parametrize("text", ["not json", "[]", '{"schema": 2}'])
def test_a_file_that_is_not_a_stamp_is_said_so(text):
    machine = VALID.machines[0]
    [check] = [c for c in checks_for(machine, VALID, smoke=False) if c.name == "deployed"]
    outcome = perform(check, Context(VALID, machine, host_reading(text)))
    assert outcome.status == "FINDING" and "is not a stamp clusterforge wrote" in outcome.findings[0].message
