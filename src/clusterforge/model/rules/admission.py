"""Rules for admission: where the test programs come from, which tests can run on the profile's hardware, a floor
for every number held to one, a budget the tests fit in, and a partition of each node that lets each test run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ...admission.tests import FLOORS_OF, SINGLE_NODE, entries, expected_seconds, slurm_minutes
from ..admission import DEFAULT_FLOORS, Admission, default_floors
from ..hardware import Profile
from ..partitions import Partition
from .check import Check
from .times import slurm_time_seconds

Members = Sequence[tuple[Partition, tuple[str, ...]]]


def declared(profile: Profile, rail_hcas: tuple[str, ...]) -> tuple[str, ...]:
    """The RDMA devices a node of the profile is declared to have: its own, then the rails'."""
    return tuple(dict.fromkeys((*profile.hcas, *rail_hcas)))


def hcas(profile: Profile, rail_hcas: tuple[str, ...]) -> tuple[str, ...]:
    """The HCAs ib_write_bw tests: the admission's own, else those carrying GPU traffic (NCCL's, without their
    port), else every one declared. A storage HCA is not held to a compute rail's floor unless the site says so."""
    spec = profile.admission
    if spec is not None and spec.hcas:
        return spec.hcas
    if profile.nccl is not None and profile.nccl.ib_hca:
        return tuple(dict.fromkeys(h.split(":", 1)[0] for h in profile.nccl.ib_hca))
    return declared(profile, rail_hcas)


def floors(spec: Admission, gpu_type: str) -> dict[str, float]:
    """Every floor the profile's tests are held to, the GPU type's default where the inventory gives none."""
    defaults = default_floors(gpu_type)
    needed = dict.fromkeys(key for test in spec.tests for key in FLOORS_OF[test])
    out = {}
    for key in needed:
        value = getattr(spec.floors, key)
        if value is None and defaults is not None:
            value = getattr(defaults, key)
        if value is not None:
            out[key] = float(value)
    return out


def _unsafe(text: str) -> bool:
    return not text or any(c.isspace() or c in "'\"`;$\\" for c in text)


def admission(check: Check, rail_hcas: tuple[str, ...], members: Members = (),
              node_profiles: dict[str, str] | None = None) -> None:
    """``members``: each partition with its nodes, ``node_profiles``: each node's profile (resolve's), for the
    partitions the gate's jobs may run in."""
    for profile in check.cluster.profiles:
        spec = profile.admission
        if spec is None:
            continue
        where = f"profiles[{profile.name}].admission"
        programs = spec.programs
        if (programs.image is None) == (programs.bin_dir is None):
            check.add(f"{where}.programs", "give exactly one of image (run through Pyxis) or bin_dir (a directory "
                      "on the nodes)", programs)
        elif programs.bin_dir is not None and (not programs.bin_dir.startswith("/") or _unsafe(programs.bin_dir)):
            check.add(f"{where}.programs.bin_dir", f"{programs.bin_dir!r} is not an absolute directory without "
                      "spaces or quotes", programs, "bin_dir")
        elif programs.image is not None:
            if _unsafe(programs.image):
                check.add(f"{where}.programs.image", f"{programs.image!r} is not an image name (no spaces or "
                          "quotes)", programs, "image")
            elif check.cluster.containers is None:
                check.add(f"{where}.programs.image", f"{programs.image!r} runs through Pyxis, which this cluster "
                          "does not have: give Cluster(containers=...) or Programs(bin_dir=...)", programs, "image")
        for test, times in Counter(spec.tests).items():
            if times > 1:
                check.add(f"{where}.tests", f"{test} is listed {times} times", spec, "tests")
        if not spec.tests:
            check.add(f"{where}.tests", "no test: the gate would admit every node untested; leave admission out "
                      "(None) for no gate", spec, "tests")
        if profile.gpus is None:
            check.add(where, "the tests measure GPUs and this profile has none: give Profile(gpus=...) or leave "
                      "admission out", spec)
            continue
        tested = hcas(profile, rail_hcas)
        unknown = [h for h in spec.hcas if h not in declared(profile, rail_hcas)]
        if unknown:
            check.add(f"{where}.hcas", f"{', '.join(unknown)}: not among the profile's HCAs (Profile.hcas, the "
                      "rails')", spec, "hcas")
        if "ib_write_bw" in spec.tests and not tested:
            check.add(f"{where}.tests", "ib_write_bw runs once per HCA the profile declares, and it declares none: "
                      "give Profile(hcas=...) (or the fabric's rails their HCA), or leave ib_write_bw out", spec,
                      "tests")
        found = floors(spec, profile.gpus.type)
        missing = [key for test in spec.tests for key in FLOORS_OF[test] if key not in found]
        if missing:
            known = ", ".join(DEFAULT_FLOORS)
            check.add(f"{where}.floors", f"clusterforge has no default floors for GPU type {profile.gpus.type!r} "
                      f"(only {known}): give Floors({', '.join(f'{k}=...' for k in dict.fromkeys(missing))})",
                      spec, "floors")
        single = [test for test in spec.tests if test in SINGLE_NODE]
        needs = sum(expected_seconds(test, spec.dcgm_level, len(tested)) for test in single)
        if single and spec.budget < needs:
            check.add(f"{where}.budget", f"{spec.budget} s is less than the {needs} s its tests take on a healthy "
                      f"node (dcgm level {spec.dcgm_level} included): every node would fail at its bound", spec,
                      "budget")
        elif single:
            _partitions_run_it(check, where, profile, spec, tested, members, node_profiles or {})


def _partitions_run_it(check: Check, where: str, profile: Profile, spec: Admission, tested: tuple[str, ...],
                       members: Members, node_profiles: dict[str, str]) -> None:
    """Each node of the profile has a partition whose MaxTime lets its longest gate test run (issue 46): the gate
    sends a test only to the node's partitions it fits in, and a node with none would stay held, drained
    ``cf:gate:cannot run``. Refused here, naming the test, its time and the partitions."""
    assert profile.gpus is not None
    timeouts = {t["name"]: t["timeout"] for t in entries(
        spec.tests, bin_dir=None, image=None, gpus=profile.gpus.count, hcas=tested, dcgm_level=spec.dcgm_level,
        floors={}, budget=spec.budget, ib_cuda=False) if t["name"] in SINGLE_NODE}
    longest = max(timeouts, key=lambda name: timeouts[name])
    minutes = slurm_minutes(timeouts[longest])
    nodes = [n for n, p in node_profiles.items() if p == profile.name]
    short: dict[tuple[str, ...], list[str]] = {}
    for node in nodes:
        theirs = [part for part, listed in members if node in listed]
        limits = [slurm_time_seconds(part.max_time) if part.max_time else float("inf") for part in theirs]
        if theirs and all(limit is not None and limit < minutes * 60 for limit in limits):
            short.setdefault(tuple(f"{part.name} ({part.max_time})" for part in theirs), []).append(node)
    for parts, stuck in short.items():
        check.add(f"{where}.budget", f"the gate's {longest} job asks {minutes} min (its share of {spec.budget} s, "
                  f"dcgm level {spec.dcgm_level}, and a minute), more than the max_time of every partition of "
                  f"{check.sample(stuck)}: {', '.join(parts)}; sbatch would refuse it there and the node stay "
                  "held: give one of them a longer max_time, or the admission a smaller budget", spec, "budget")
