"""End to end: slurmrestd on the test cluster's controller (inventories/vagrant.py's Rest()), JWT-authenticated with
the key the deploy took from OpenBao: a request with a token from `scontrol token` lists the nodes, one without is
refused, and after `clusterforge secrets rotate jwt-key` and a deploy the old token is refused and a new one works.
Debian's slurmrestd, slurmctld and slurmdbd, on both releases (22.05: /slurm/v0.0.38, 24.11: /slurm/v0.0.41)."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request

import pytest
from e2e.testbed import MACHINES, REPO

pytestmark = pytest.mark.e2e

CTL = MACHINES["ctl"]
API = {"22.05": "v0.0.38", "24.11": "v0.0.41", "26.05": "v0.0.45"}
KEY = "/etc/slurm/jwt_hs256.key"


def token(bed) -> str:
    return bed.run(CTL, "scontrol token lifespan=600").strip().split("=", 1)[1]


def nodes(bed, jwt: str | None) -> tuple[int, list[str]]:
    headers = {"X-SLURM-USER-NAME": "root", **({"X-SLURM-USER-TOKEN": jwt} if jwt else {})}
    request = urllib.request.Request(f"http://{CTL}:6820/slurm/{API[bed.slurm]}/nodes", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, sorted(n["name"] for n in json.load(answer)["nodes"])
    except urllib.error.HTTPError as refused:
        return refused.code, []


def test_a_token_lists_the_nodes_none_is_refused_and_a_rotated_key_refuses_the_old_one(testbed):
    bed = testbed
    shown = bed.run(CTL, "systemctl show -p ActiveState -p User slurmrestd")  # in systemd's order
    assert set(shown.split()) == {"ActiveState=active", "User=slurmrestd"}, shown
    assert bed.run(CTL, f"stat -c '%U %a' {KEY}").split() == ["slurm", "600"]
    assert bed.run(MACHINES["gpu01"], f"test -e {KEY} && echo there || echo absent").strip() == "absent"
    old = token(bed)
    assert nodes(bed, old) == (200, ["gpu01", "gpu02"])
    assert nodes(bed, None)[0] == 401
    rotated = subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "secrets", "rotate", str(bed.inventory),
                              "jwt-key"], cwd=REPO, env=bed.env(), text=True, capture_output=True, timeout=120)
    assert rotated.returncode == 0, rotated.stdout + rotated.stderr
    deployed = bed.deploy()
    assert deployed.returncode == 0, deployed.output[-4000:]
    assert nodes(bed, old)[0] != 200, "a token signed with the old key"
    assert nodes(bed, token(bed)) == (200, ["gpu01", "gpu02"])
