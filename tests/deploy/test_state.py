"""The host-state command as a host runs it (a real sh), for what a unit test can show without a host: a daemon
still running an executable that a package has since replaced; a directory's entries read without naming them."""

from __future__ import annotations

import shutil
import subprocess

from clusterforge.engine.state import HostState


def test_a_daemon_running_a_replaced_executable_is_read_as_replaced(tmp_path):
    program = tmp_path / "slurmd"
    shutil.copy("/bin/sleep", program)
    old = subprocess.Popen([str(program), "60"])
    kept = subprocess.Popen(["/bin/sleep", "60"])
    try:
        program.unlink()  # as dpkg does when it unpacks a new version: the running inode is gone
        (tmp_path / "bin").mkdir()
        # systemd's answer for two running units and one stopped, as `systemctl show` prints it.
        units = [("slurmd", "active", "enabled", old.pid), ("munge", "active", "enabled", kept.pid),
                 ("sackd", "inactive", "disabled", 0)]
        shown = "\\n\\n".join(f"Id={u}.service\\nActiveState={a}\\nUnitFileState={e}\\nLoadState=loaded\\nMainPID={p}"
                              for u, a, e, p in units)
        (tmp_path / "bin" / "systemctl").write_text(f"#!/bin/sh\nprintf '{shown}\\n'\n")
        (tmp_path / "bin" / "systemctl").chmod(0o755)
        command = HostState().command(units=("slurmd.service", "munge.service", "sackd.service"))
        out = subprocess.run(["sh", "-c", command], env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"},
                             capture_output=True, text=True, check=True).stdout
        state = HostState().process(out.splitlines())
    finally:
        old.kill()
        kept.kill()
    assert state.unit("slurmd").replaced and state.unit("slurmd").active
    assert not state.unit("munge").replaced and state.unit("munge").active
    assert not state.unit("sackd").replaced and not state.unit("sackd").active and state.unit("sackd").known


def test_a_listed_directorys_entries_are_read_as_paths_without_naming_them(tmp_path):
    records, notes = tmp_path / "admitted", tmp_path / "holds"
    records.mkdir()
    notes.mkdir()
    (records / "gpu01").write_text('{"how": "passed"}\n')
    (records / "gpu 02").write_text("")
    command = HostState().command(listed=(str(records), str(notes), str(tmp_path / "none")))
    assert "gpu01" not in command
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout
    state = HostState().process(out.splitlines())
    assert sorted(state.paths) == [str(records / "gpu 02"), str(records / "gpu01")]
    assert state.paths[str(records / "gpu01")].kind == "file" and state.paths[str(records / "gpu01")].sha256 is None


def test_the_texts_and_records_come_back_whole_in_an_archive_a_fraction_of_their_blocks(tmp_path):
    records = tmp_path / "applied"
    (records / "slurm").mkdir(parents=True)
    # Small files, as the records are: tar gives each a 512-byte header and pads it to 512 bytes.
    files = {records / f"record-{n}": f"digest {n}\n" for n in range(30)}
    files[records / "slurm" / "slurm.conf"] = "ClusterName=c\n" * 150
    files[tmp_path / "nccl.conf"] = "NCCL_IB_HCA=mlx5_0\n"
    for path, text in files.items():
        path.write_text(text)
    command = HostState().command(texts=(str(tmp_path / "nccl.conf"), str(tmp_path / "missing")),
                                  records=str(records))
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout
    assert HostState().process(out.splitlines()).texts == {str(path): text for path, text in files.items()}
    archive = next(line for line in out.splitlines() if line.startswith("@tar "))
    blocks = sum(512 * (1 + -(-len(text) // 512)) for text in files.values())
    assert len(archive) < blocks / 4


def test_nothing_to_archive_is_no_text():
    command = HostState().command(texts=("/nonexistent/a",), records="/nonexistent/applied")
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout
    assert HostState().process(out.splitlines()).texts == {}
