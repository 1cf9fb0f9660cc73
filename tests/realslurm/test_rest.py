"""slurmrestd with JWT authentication on Debian's real Slurm (22.05 on this host, 24.11 and 26.05 in Debian roots): the
rendered slurm.conf and slurmdbd.conf of the golden rest inventory start slurmctld and slurmdbd with the JWT key,
`scontrol token` makes a token, and slurmrestd, run as its rendered drop-in says, lists the nodes for a request
with it, refuses one without (401), and refuses a token made with the old key once slurmctld and slurmdbd restart
with a new one (the deploy's rotation), while slurmrestd itself keeps running.

Adapted to run here, as test_rendered_configs.py adapts every case: this machine is the controller, accounting is
a scratch MariaDB and slurmdbd, slurmrestd listens on loopback at a free port (through the inventory's Rest), and
it runs as nobody, since the deploy's slurmrestd user does not exist on this machine. Each daemon sees the
rendered files' directory as /etc/slurm, in its own mount namespace, where the files name the key.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path

import pytest
from golden_cases import cases
from realslurm import harness
from realslurm.test_rendered_configs import adapted, with_keys

from clusterforge.model import Rest
from clusterforge.model.settings import JWT_KEY
from clusterforge.render import render_all, slurmrestd

CASE = next(c for c in cases() if c.name == "rest")
# The API version a client asks each release for (22.05 has v0.0.36-38, 24.11 v0.0.40-42, 26.05 v0.0.42-45).
API = {"22.05": "v0.0.38", "24.11": "v0.0.41", "26.05": "v0.0.45"}
NODES = {version: f"/slurm/{api}/nodes" for version, api in API.items()}
PREFIXES = {version: (f"/slurm/{api}/", f"/slurmdb/{api}/") for version, api in API.items()}


def write_key(etc: Path, runtime: harness.SlurmRuntime, key: bytes) -> None:
    """The key as the deploy writes it: 0600 slurm:slurm (24.11 refuses one others may read)."""
    path = etc / Path(JWT_KEY).name
    path.write_bytes(key)
    os.chown(path, *runtime.ids("slurm"))
    path.chmod(0o600)


def token(ctld: harness.Slurmctld) -> str:
    out = ctld.scontrol("token", "username=root", "lifespan=600").strip()
    assert out.startswith("SLURM_JWT="), out
    return out.split("=", 1)[1]


def with_token(value: str) -> dict[str, str]:
    return {"X-SLURM-USER-NAME": "root", "X-SLURM-USER-TOKEN": value}


def listed(body: str) -> list:
    try:
        return json.loads(body).get("nodes") or []
    except ValueError:
        return []


def jwt_complaints(log: str) -> list[str]:
    """What a daemon said of auth/jwt or its key beyond loading it (slurmdbd's other errors on a fresh database,
    such as 24.11's "We can't find assoc 1", are not the rendered files')."""
    return [line for line in log.splitlines() if re.search(r"\b(error|warning|fatal):", line)
            and re.search(r"jwt|key file", line, re.I)]


@pytest.mark.realslurm
@pytest.mark.parametrize("version", sorted(API))
def test_slurmrestd_serves_a_token_refuses_none_and_one_of_an_old_key(version):
    runtime = harness.require(version, accounting=True, rest=True)
    port, dbd_port, storage_port, rest_port = (harness.free_port() for _ in range(4))
    with harness.scratch_dir() as scratch:
        valid = adapted(CASE, runtime, scratch, port, dbd_port, rest=Rest(listen="127.0.0.1", port=rest_port))
        files = render_all(valid)
        etc = scratch / "etc"
        etc.mkdir(mode=0o755)
        for name, text in files.items():
            if name == "slurmdbd.conf":
                text = with_keys(text, harness.slurmdbd_overrides(scratch, dbd_port, storage_port))
            (etc / name).write_text(text)
        assert f"AuthAltParameters=jwt_key={JWT_KEY}" in files["slurm.conf"]
        assert f"AuthAltParameters=jwt_key={JWT_KEY}" in files["slurmdbd.conf"]
        command, env = harness.unit_command(files[slurmrestd.FLAT_NAME])
        assert command[-1] == f"127.0.0.1:{rest_port}" and env == {"SLURM_JWT": "daemon"}

        # slurmrestd starts on its own, as the deploy starts it once slurmctld runs; it reads slurm.conf only.
        with harness.running_slurmrestd(runtime, etc, scratch, command, env, rest_port) as rest:
            old = secrets.token_bytes(64)
            write_key(etc, runtime, old)
            with harness.running_slurmdbd(runtime, etc / "slurmdbd.conf", scratch, own_etc=True) as dbd, \
                    harness.running_slurmctld(runtime, etc, scratch, own_etc=True) as ctld:
                assert ctld.errors() == [], "slurmctld complained about the rendered files"
                made = token(ctld)
                status, body = rest.get(NODES[version], with_token(made))
                assert status == 200, body[:2000]
                shown = sorted(node["name"] for node in json.loads(body)["nodes"])
                assert shown == sorted(n.name for n in valid.nodes)
                status, body = rest.get(NODES[version])
                assert status == 401, body[:500]
                # slurmdbd takes the token too: the accounting paths answer with it.
                status, body = rest.get(PREFIXES[version][1] + "clusters", with_token(made))
                assert status == 200 and valid.name in body, body[:2000]
                spec = json.loads(rest.get("/openapi/v3", with_token(made))[1])
                assert {p.split("/", 3)[2] for p in spec["paths"] if p.startswith(("/slurm/", "/slurmdb/"))} >= {
                    PREFIXES[version][0].split("/")[2]}
                assert jwt_complaints(dbd.log()) == [] and jwt_complaints(ctld.log()) == []

            write_key(etc, runtime, secrets.token_bytes(64))  # rotated: slurmdbd and slurmctld restart, not it
            with harness.running_slurmdbd(runtime, etc / "slurmdbd.conf", scratch, own_etc=True), \
                    harness.running_slurmctld(runtime, etc, scratch, own_etc=True) as ctld:
                # Refused, each release its own way (22.05: 500, 24.11: 511), and no node shown.
                status, body = rest.get(NODES[version], with_token(made))
                assert status in (401, 500, 511) and not listed(body), (status, body[:1000])
                status, body = rest.get(NODES[version], with_token(token(ctld)))
                assert status == 200, body[:2000]
