"""The job boundaries' findings, pure: which process on which GPU is someone else's, or outlived its job; and the
"Processes" section of nvidia-smi -q they are read from."""

from __future__ import annotations

from pathlib import Path

from clusterforge.health import parse, probes
from clusterforge.health.expect import Expectations

SMI = (Path(__file__).resolve().parents[1] / "check" / "fixtures" / "h100-sxm-x8.nvidia-smi-q.txt").read_text()
EXPECT = Expectations(node="gpu01", gpu_type="h100", device_files=tuple(f"/dev/nvidia{m}" for m in range(8)))

# A GPU's Processes section as nvidia-smi -q prints it with two processes (format of real outputs: a display's
# graphics process and a CUDA one).
PROCESSES = """    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 2573
            Type                          : G
            Name                          : /usr/lib/xorg/Xorg
            Used GPU Memory               : 276 MiB
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 4242
            Type                          : C
            Name                          : python
            Used GPU Memory               : 30000 MiB
"""


def gpus(first_gpu_section: str = PROCESSES, used: str = "1") -> list[parse.Gpu]:
    text = SMI.replace("    Processes                             : None\n", first_gpu_section, 1)
    text = text.replace("        Used                              : 1 MiB\n",
                        f"        Used                              : {used} MiB\n", 1)
    return parse.nvidia_smi_query(text)


def test_the_processes_section_is_read_per_gpu():
    found = gpus()
    assert [(p.pid, p.kind, p.name, p.used_mib) for p in found[0].processes] == [
        (2573, "G", "/usr/lib/xorg/Xorg", 276), (4242, "C", "python", 30000)]
    assert [p.computes for p in found[0].processes] == [False, True]
    assert all(g.processes == () for g in found[1:])
    assert found[0].memory_used_mib == 1


def test_before_a_job_any_compute_process_on_its_gpus_is_foreign():
    found = gpus()
    assert [f.reason for f in probes.foreign(EXPECT, found, [0])] == [
        "cf:job:foreign gpu0 0000:18:00 busy: pid 4242 python 30000 MiB"]
    assert probes.foreign(EXPECT, found, [1, 2]) == []
    assert len(probes.foreign(EXPECT, found, None)) == 1  # Slurm named no GPU: all of them are looked at


def test_after_a_job_a_process_of_another_running_job_is_not_a_leftover():
    found = gpus()
    owners = {4242: "77"}
    assert probes.leftover(EXPECT, found, [0], owners.get, "41") == []
    for owner in (None, "41"):  # outside any job, or still in the ended job's cgroup
        (finding,) = probes.leftover(EXPECT, found, [0], lambda pid, o=owner: o, "41")
        assert finding.reason == "cf:job:leftover gpu0 0000:18:00 pid 4242 python 30000 MiB outlived its job"
        assert not finding.keeps_only


def test_memory_held_with_no_process_is_a_leftover_past_the_idle_amount():
    assert probes.leftover(EXPECT, gpus("", used="200"), [0], lambda pid: None, "41") == []
    (finding,) = probes.leftover(EXPECT, gpus("", used="9000"), [0], lambda pid: None, "41")
    assert finding.reason == "cf:job:leftover gpu0 0000:18:00 9000 MiB in use by no process"


def test_between_jobs_a_leftover_only_keeps_a_drain():
    (finding,) = probes.leftover(EXPECT, gpus(), None, lambda pid: None, None)
    assert finding.keeps_only
