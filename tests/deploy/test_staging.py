"""Uploads and downloads through sudo are staged where no one else on the host can reach them (engine/remote.py).

pyinfra's own SSH connector does the work here, with its real put_file and get_file (the staging name, the copy under
sudo, the removal): only its two ways to the host are pointed at this machine, since no sshd runs here. Its SFTP
write becomes a local write and its commands run in a local shell (as whoever runs the test: the SSH user and root
are one here, so the test shows where the copy is staged, not who may read it; the test cluster shows that, as a
real person, in tests/e2e/test_boundary.py). A person planted a link at the name pyinfra would stage at: before,
the upload was written through it into a file of root's.
"""

from __future__ import annotations

import os
import subprocess
from io import BytesIO
from pathlib import Path

import pytest
from pyinfra.api import Config, Inventory, State
from pyinfra.connectors.util import CommandOutput, OutputLine

from clusterforge.engine import remote

CONTENT = b"ClusterName=clusterforge\n"


def _host(tmp_path: Path):
    """A pyinfra SSH host with sudo whose commands and SFTP writes reach this machine, and the commands it ran."""
    inventory = Inventory((["node.example"], {"_sudo": True}))
    State(inventory, Config(TEMP_DIR="/tmp"))  # pyinfra's staging directory, without asking the host its TMPDIR
    host = inventory.get_host("node.example")
    ran: list[str] = []

    def run_shell_command(command, print_output=False, print_input=False, **arguments):
        text = command.get_raw_value() if hasattr(command, "get_raw_value") else str(command)
        ran.append(text)
        done = subprocess.run(["sh", "-c", text], capture_output=True, text=True, check=False)
        lines = [OutputLine("stdout", line) for line in done.stdout.splitlines()]
        lines += [OutputLine("stderr", line) for line in done.stderr.splitlines()]
        return done.returncode == 0, CommandOutput(lines)

    def put(source, location):  # SFTP's open(..., "w"): through a link, as the real one does
        with open(location, "wb") as out:
            out.write(source.read() if hasattr(source, "read") else Path(source).read_bytes())

    def get(location, destination):
        destination.write(Path(location).read_bytes())

    host.connector.run_shell_command = run_shell_command
    host.connector._put_file = put
    host.connector._get_file = get
    return host, ran


@pytest.fixture
def planted(tmp_path):
    """What a person on the host made in advance at the staging name pyinfra computes for a destination: a link to
    a file of root's (the canary)."""
    canary = tmp_path / "roots-own"
    canary.write_bytes(b"root's\n")
    destination = tmp_path / "slurm.conf"
    inventory = Inventory((["node.example"], {"_sudo": True}))
    State(inventory, Config())
    predictable = Path(inventory.get_host("node.example").get_temp_filename(str(destination),
                                                                           temp_directory="/tmp"))
    predictable.unlink(missing_ok=True)
    predictable.symlink_to(canary)
    yield destination, canary
    predictable.unlink(missing_ok=True)


def _staging_left() -> set[str]:
    return {p.name for p in Path(os.environ.get("TMPDIR", "/tmp")).glob("clusterforge.*")}


def test_an_upload_through_sudo_is_staged_in_a_private_directory_of_its_own(tmp_path, planted):
    destination, canary = planted
    host, ran = _host(tmp_path)
    before = _staging_left()
    command = remote.StagedUpload(BytesIO(CONTENT), str(destination))
    assert command.execute(host.state, host, remote.sudo_arguments(host))
    assert destination.read_bytes() == CONTENT
    assert canary.read_bytes() == b"root's\n"  # before: the upload went through the person's link
    made = [line for line in ran if line.startswith("mktemp -d")]
    assert len(made) == 1, ran
    copy = next(line for line in ran if line.startswith("cp "))
    assert "/clusterforge." in copy.split()[1] and "/tmp/pyinfra-" not in copy, ran
    assert _staging_left() == before  # the directory went with the copy


def test_a_build_copied_through_sudo_is_staged_in_a_private_directory_too(tmp_path, planted):
    destination, canary = planted
    host, ran = _host(tmp_path)
    assert remote.put(host, BytesIO(CONTENT), str(destination))
    assert destination.read_bytes() == CONTENT and canary.read_bytes() == b"root's\n"
    # a download under sudo: root copies the file into the staging directory, which no link of a person's can be in
    fetched = BytesIO()
    assert remote.get(host, str(destination), fetched)
    assert fetched.getvalue() == CONTENT and canary.read_bytes() == b"root's\n"
    assert not any("/tmp/pyinfra-" in line for line in ran), ran


def test_the_staging_directory_is_private_and_unpredictable(tmp_path):
    host, _ = _host(tmp_path)
    seen = []
    with remote.private_directory(host) as first, remote.private_directory(host) as second:
        for directory in (first, second):
            mode = os.stat(directory).st_mode & 0o777
            seen.append((directory, oct(mode)))
    assert first != second and all(mode == "0o700" for _, mode in seen), seen
    assert not Path(first).exists() and not Path(second).exists()
