"""Automatic repair through the whole deploy on simulated hosts (roles/repair.py): the BMCs' credentials on the
controller, one root-only file for each node the loop power cycles, and only for those: a node that leaves that set
(its BMC removed, its profile's power cycle turned off, the node removed from the inventory) loses its file, a link
never followed, a second deploy changes nothing, and without repair the whole directory goes."""

from __future__ import annotations

import base64

from deploy.fakedeploy import BMC_LOGIN, SimCluster, dump

from clusterforge.render import repair as render
from clusterforge.roles.repair import CREDENTIALS_RECORD

VERSION, AUTH = "24.11", "slurm"


def inventory(power_cycle: str = "None", bmc: str = "gpu[01-02]", nodes: str = "gpu[01-04]",
              protocol: str = "ipmi") -> str:
    """The small cluster's GPU nodes repaired; those of ``bmc`` have a BMC."""
    first, last = int(bmc[4:6]), int(bmc[7:9])
    rest = [n for n in range(int(nodes[4:6]), int(nodes[7:9]) + 1) if not first <= n <= last]
    others = (f'Nodes("gpu[{rest[0]:02}-{rest[-1]:02}]", address="10.9.1.[{rest[0]}-{rest[-1]}]", profile="gpu", '
              'leaf="leaf1"), ') if rest else ""
    return (f'profiles=(gpu_profile(repair=Repair(mode="on", power_cycle={power_cycle})),), '
            f'nodes=(Nodes("{bmc}", address="10.9.1.[{first}-{last}]", profile="gpu", leaf="leaf1", '
            f'bmc=Bmc(address="10.9.2.[{first}-{last}]", protocol="{protocol}")), {others})')


def credentials(run) -> dict[str, dict]:
    """The credentials files on the controller, by node: owner, mode and content."""
    ctl = run.sims["ctl"]
    return {path.rsplit("/", 1)[1].removesuffix(".json"): {**meta, "content": base64.b64decode(meta["content"])}
            for path, meta in ctl.files.items() if path.startswith(render.BMC_DIR + "/")}


def deployed(cluster: SimCluster):
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    assert "B4seb0ard-pw" not in run.output   # BMC_LOGIN's password: never in the deploy's output
    return run


def quiet(cluster: SimCluster) -> None:
    again = cluster.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_each_power_cycled_node_has_its_credentials_root_only_and_a_second_deploy_changes_nothing(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version=VERSION, auth=AUTH, extra=inventory())
    first = deployed(cluster)
    assert credentials(first) == {node: {"user": "root", "group": "root", "mode": "600", "content": BMC_LOGIN}
                                  for node in ("gpu01", "gpu02")}
    assert first.sims["ctl"].dirs[render.BMC_DIR] == {"user": "root", "group": "root", "mode": "700"}
    assert first.sims["ctl"].content(f"/var/lib/clusterforge/applied/{CREDENTIALS_RECORD}") == b"gpu01 gpu02\n"
    assert not [p for p in first.sims["ctl"].exposed if p.startswith(render.BMC_DIR)]   # never readable by others
    assert "ipmitool" in first.sims["ctl"].packages and "python3-sushy" not in first.sims["ctl"].packages
    quiet(cluster)


def test_the_controller_gets_what_its_bmcs_protocol_is_spoken_through_and_redfish_the_same_credentials(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version=VERSION, auth=AUTH, extra=inventory(protocol="redfish"))
    first = deployed(cluster)
    packages = first.sims["ctl"].packages
    assert "python3-sushy" in packages and "ipmitool" not in packages
    assert credentials(first)["gpu01"]["content"] == BMC_LOGIN
    assert '"protocol": "redfish"' in first.sims["ctl"].content(render.PATH).decode()
    quiet(cluster)


def test_a_node_that_loses_its_bmc_loses_its_credentials_once_the_plan_no_longer_names_it(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version=VERSION, auth=AUTH, extra=inventory())
    deployed(cluster)
    cluster.set_inventory(version=VERSION, auth=AUTH, extra=inventory(bmc="gpu[01-01]"))
    planned = cluster.plan()
    assert planned.returncode == 0, planned.output
    assert f"{render.BMC_DIR}/gpu02.json: removed (gpu02 is no longer power cycled)" in planned.output
    fewer = deployed(cluster)
    assert sorted(credentials(fewer)) == ["gpu01"]
    order = [c for h, c in fewer.order if h == "ctl"]
    swept = next(i for i, c in enumerate(order) if c.startswith(f"find {render.BMC_DIR} "))
    assert order.index(f"mv -f {render.PATH}.clusterforge-new {render.PATH}") < swept
    quiet(cluster)


def test_turning_power_cycle_off_removes_every_credentials_file_and_keeps_the_directory(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version=VERSION, auth=AUTH, extra=inventory())
    deployed(cluster)
    cluster.set_inventory(version=VERSION, auth=AUTH, extra=inventory(power_cycle="False"))
    off = deployed(cluster)
    assert credentials(off) == {} and render.BMC_DIR in off.sims["ctl"].dirs
    quiet(cluster)


def test_a_node_removed_from_the_inventory_loses_its_credentials(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version=VERSION, auth=AUTH,
                         extra=inventory(bmc="gpu[03-05]", nodes="gpu[01-05]"))
    assert sorted(credentials(deployed(cluster))) == ["gpu03", "gpu04", "gpu05"]
    cluster.set_inventory(version=VERSION, auth=AUTH, extra=inventory(bmc="gpu[03-04]"))
    assert sorted(credentials(deployed(cluster))) == ["gpu03", "gpu04"]
    quiet(cluster)


def test_a_controller_deployed_before_the_record_is_swept_once_never_through_a_link(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version=VERSION, auth=AUTH, extra=inventory())
    deployed(cluster)
    path = tmp_path / "sim" / "ctl.json"
    ctl = cluster.sims()["ctl"]
    # What an earlier release left: no record, a node's file it no longer cycles, and a link where a file was.
    ctl.files.pop(f"/var/lib/clusterforge/applied/{CREDENTIALS_RECORD}")
    ctl.files[render.credentials_file("gpu07")] = {**ctl.files[render.credentials_file("gpu01")]}
    ctl.files["/etc/shadow"] = {"content": base64.b64encode(b"root:x\n").decode(), "user": "root", "group": "shadow",
                                "mode": "640"}
    ctl.links[render.credentials_file("gpu08")] = {"target": "/etc/shadow", "user": "root"}
    ctl.save(path)
    swept = deployed(cluster)
    assert sorted(credentials(swept)) == ["gpu01", "gpu02"]
    assert render.credentials_file("gpu08") not in swept.sims["ctl"].links
    assert swept.sims["ctl"].content("/etc/shadow") == b"root:x\n"
    quiet(cluster)


def test_without_repair_the_credentials_directory_goes(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version=VERSION, auth=AUTH, extra=inventory())
    deployed(cluster)
    cluster.set_inventory(version=VERSION, auth=AUTH)
    off = deployed(cluster)
    assert credentials(off) == {} and render.BMC_DIR not in off.sims["ctl"].dirs
    assert off.sims["ctl"].units[render.UNIT] == {"active": False, "enabled": False}
    quiet(cluster)
