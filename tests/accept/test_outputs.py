"""Where accept's jobs write their output, and how it is read back (accept/jobs.py): a job user can plant files,
links and FIFOs at any name in /tmp, and job ids are sequential, so a verdict read from a name there is hers to
give. The output goes to a directory of root's alone, made for the run; the read takes a regular file of root's
there and nothing else, says why it refuses, and never blocks. Against Slurm's stand-in (tests/slurm_standin, which
writes each output as slurmstepd does: root opening the path, a link followed) and a real shell for the nodes'
commands (cluster.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from accept.cluster import TOOLS
from accept.test_accept import NODES, accept, entries, slurm

from clusterforge.accept import jobs

NOBODY = 65534
PLANTED_IDS = range(1000, 1100)   # the stand-in's job ids start at 1000, one a job


def healthy_allreduce_table() -> str:
    """What a healthy node's all_reduce_perf prints (the stand-in's, gpu01 alone): a planted "pass"."""
    env = {**os.environ, "CLUSTERFORGE_TESTBED_ROOT": "/nonexistent", "SLURMD_NODENAME": "gpu01",
           "SLURM_NTASKS": "8", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([str(TOOLS / "all_reduce_perf"), "-b", "16G", "-e", "16G", "-g", "8"], env=env,
                          capture_output=True, text=True, check=True).stdout


def plant(where: Path, victim: Path) -> dict[Path, str]:
    """At every name accept's outputs had (/tmp/cf-accept-<id>.out, ids in sequence), as a job user could: a link to a
    file of root's, a FIFO, or a file of hers holding a healthy node's table. The files planted, with their text."""
    files = {}
    table = healthy_allreduce_table()
    for job_id in PLANTED_IDS:
        path = where / f"cf-accept-{job_id}.out"
        kind = job_id % 3
        if kind == 0:
            path.symlink_to(victim)
        elif kind == 1:
            os.mkfifo(path, 0o666)
        else:
            path.write_text(table)
            path.chmod(0o666)
            files[path] = table
        os.lchown(path, NOBODY, NOBODY)
    return files


def test_outputs_planted_at_every_old_name_change_no_verdict_and_nothing_of_roots(tmp_path, monkeypatch):
    """Before: root's job output followed the links into the file of root's, and the read of a FIFO stalled. Now the
    outputs are in the run's directory: the slow node is still found and drained, the file of root's and the files
    planted are as they were, and no read stalls."""
    planted_dir = Path("/tmp")
    victim_dir = tmp_path / "etc"
    victim_dir.mkdir()
    victim = victim_dir / "slurm.conf"
    victim.write_text("ClusterName=prod\n")
    taken = [planted_dir / f"cf-accept-{i}.out" for i in PLANTED_IDS
             if os.path.lexists(planted_dir / f"cf-accept-{i}.out")]
    assert taken == [], f"names this test plants at exist already: {taken[:3]}"
    try:
        files = plant(planted_dir, victim)
        standin = slurm(tmp_path, {"gpu03": {"allreduce": 300}})
        run, said = accept(standin, tmp_path, plan={n: entries(("allreduce", "allreduce_multi")) for n in NODES})
        report = run.run()
        assert victim.read_text() == "ClusterName=prod\n"
        assert all(path.read_text() == text for path, text in files.items())
        assert standin.stalled == []
        assert [(f.node, f.drain.reason) for f in report.findings] == [("gpu03", "cf:accept:allreduce 300 GB/s < 460")]
        assert standin.state("gpu03") == ("drained", "cf:accept:allreduce 300 GB/s < 460")
        assert all(standin.state(n)[0] == "idle" for n in NODES if n != "gpu03")
        assert all(job.stdout.startswith(run.output_dir + "/") for job in standin.submitted)
        # The run's directory is gone at the end, and its parent is root's alone.
        assert not os.path.exists(run.output_dir)
        base = os.stat(standin.output_base)
        assert (base.st_uid, base.st_mode & 0o777) == (0, 0o700)
    finally:
        for job_id in PLANTED_IDS:
            path = planted_dir / f"cf-accept-{job_id}.out"
            if os.path.lexists(path) and os.lstat(path).st_uid == NOBODY:
                path.unlink()


def test_a_job_that_wrote_no_output_fails_its_test_and_says_why(tmp_path):
    standin = slurm(tmp_path, no_output={"gpu04"})
    run, said = accept(standin, tmp_path, plan={n: entries(("allreduce",)) for n in NODES})
    report = run.run()
    [finding] = report.findings
    assert finding.node == "gpu04"
    assert finding.reason.startswith("allreduce output refused: ")
    # Its run and the confirming one (single-node failures are run again before a drain): both refused.
    kept = [r for r in report.results if r["node"] == "gpu04"]
    assert len(kept) == 2
    for result in kept:
        assert result["passed"] is False
        assert result["detail"].endswith(".out is missing: the job wrote no output there")
        assert result["detail"].startswith(f"output refused: {run.output_dir}/")


def test_a_node_whose_output_directory_others_may_write_to_is_left_alone_and_named(tmp_path):
    standin = slurm(tmp_path)
    top = Path(standin.output_base).parent
    top.mkdir(mode=0o755)
    top.chmod(0o777)
    run, said = accept(standin, tmp_path, plan={n: entries(("allreduce",)) for n in NODES})
    report = run.run()
    why = f"no output directory of root's alone could be made: {top} is not a directory of root only root may write to"
    assert report.left_alone == {n: why for n in NODES}
    assert standin.slurm.jobs == {} and report.exit_status == 2
    assert f"gpu01 left alone: {why}" in said


# -- the node's commands, in a real shell ------------------------------------------------------------------------


def sh(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30, check=False)


def made(tmp_path) -> str:
    directory = jobs.run_directory(str(tmp_path / "var-lib-clusterforge" / "accept-runs"))
    assert sh(jobs.prepare_command(directory)).returncode == 0
    return directory


def test_the_run_directory_is_root_s_alone_and_made_again_for_a_second_node_sharing_it(tmp_path):
    directory = made(tmp_path)
    for path, mode in ((directory, 0o700), (os.path.dirname(directory), 0o700),
                       (os.path.dirname(os.path.dirname(directory)), 0o755)):
        seen = os.lstat(path)
        assert (seen.st_uid, seen.st_mode & 0o7777) == (0, mode), path
    assert sh(jobs.prepare_command(directory)).returncode == 0
    assert jobs.run_directory() != jobs.run_directory()
    assert jobs.run_directory().startswith("/var/lib/clusterforge/accept-runs/run-")


def test_a_run_directory_made_a_link_or_opened_to_others_is_refused(tmp_path):
    directory = made(tmp_path)
    os.rmdir(directory)
    os.symlink(tmp_path, directory)
    done = sh(jobs.prepare_command(directory))
    assert done.returncode == jobs.REFUSED
    assert jobs.refusal(done.stderr) == f"{directory} could not be made {jobs.ROOTS_ALONE}"
    os.unlink(directory)
    os.mkdir(directory, 0o755)
    done = sh(jobs.read_output_command(directory, 7))
    assert jobs.refusal(done.stderr) == f"the output directory {directory} is not {jobs.ROOTS_ALONE}"


def test_the_read_gives_roots_regular_file_once_and_refuses_anything_else_without_blocking(tmp_path):
    directory = made(tmp_path)
    (Path(directory) / "1.out").write_text("the table\n")
    done = sh(jobs.read_output_command(directory, 1))
    assert (done.returncode, done.stdout) == (0, "the table\n")
    assert not os.path.exists(f"{directory}/1.out")
    victim = tmp_path / "shadow"
    victim.write_text("root:secret\n")
    os.symlink(victim, f"{directory}/2.out")
    os.mkfifo(f"{directory}/3.out")
    (Path(directory) / "4.out").write_text("a pass\n")
    os.chown(f"{directory}/4.out", NOBODY, NOBODY)
    os.mkdir(f"{directory}/5.out")
    expected = {1: "is missing: the job wrote no output there", 2: "is a symbolic link, not the job's output",
                3: "is a fifo, not a regular file", 4: f"belongs to uid {NOBODY}, not root",
                5: "is a directory, not a regular file"}
    for job_id, why in expected.items():
        done = sh(jobs.read_output_command(directory, job_id))
        assert (done.returncode, done.stdout) == (jobs.REFUSED, ""), job_id
        assert jobs.refusal(done.stderr) == f"{directory}/{job_id}.out {why}"
    assert victim.read_text() == "root:secret\n"
    assert sh(jobs.remove_command(directory)).returncode == 0 and not os.path.exists(directory)
