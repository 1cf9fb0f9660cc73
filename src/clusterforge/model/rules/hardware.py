"""Rules for hardware: profiles, their CPUs and memory, GPUs and the sockets they sit on."""

from __future__ import annotations

import re
from collections import Counter

from ...health import gpu_names
from ...versions import AUTODETECT_NVIDIA
from ..hardware import Profile
from .check import Check

Files = dict[str, tuple[str, ...]]  # each GPU profile's device files, GPU i's at index i


def profiles(check: Check) -> tuple[dict[str, Profile], Files]:
    """The profiles by name (the first of a repeated name), and their GPU device files."""
    found: dict[str, Profile] = {}
    files: Files = {}
    check.duplicates(((p.name, p, f"profiles[{p.name}]") for p in check.cluster.profiles),
                     "a profile of this name is already defined")
    for profile in check.cluster.profiles:
        if profile.name in found:
            continue
        found[profile.name] = profile
        where = f"profiles[{profile.name}]"
        check.name(where, profile.name, profile, "profile")
        for field in ("sockets", "cores_per_socket", "threads_per_core", "real_memory"):
            check.positive(f"{where}.{field}", getattr(profile, field), profile)
        for feature in profile.features:
            check.feature(f"{where}.features", feature, profile)
        if profile.gpus is not None:
            files[profile.name] = gpus(check, f"{where}.gpus", profile)
    if not found and not check.lacks("profiles"):
        check.add("profiles", "no hardware profile is defined", check.cluster)
    return found, files


def device_files(check: Check, where: str, profile: Profile) -> tuple[tuple[str, ...], bool]:
    """The device files, and whether they agree with the GPU count (problems recorded)."""
    gpus = profile.gpus
    assert gpus is not None
    if gpus.files is None:
        if gpus.autodetect == "off":
            check.add(where, "missing: typed GPUs need their device files unless autodetect is on", gpus)
        return (), True
    files = check.expand(where, gpus.files, gpus)
    if files is None:
        return (), False
    agree = True
    if len(files) != gpus.count:
        check.add(where, f"{gpus.files} names {len(files)} device files but count is {gpus.count}", gpus)
        agree = False
    for name, times in Counter(files).items():
        if times > 1:
            check.add(where, f"{name} is listed {times} times", gpus)
    if any(not name.startswith("/dev/") for name in files):
        check.add(where, f"{next(n for n in files if not n.startswith('/dev/'))} is not a device file under /dev",
                  gpus)
    return tuple(files), agree


def gpus(check: Check, where: str, profile: Profile) -> tuple[str, ...]:
    gpus = profile.gpus
    assert gpus is not None
    if not re.match(r"^[A-Za-z0-9_.-]+$", gpus.type):
        check.add(f"{where}.type", f"{gpus.type!r} is not a valid GRES type", gpus)
    else:
        family = gpu_names.family(gpus.type)
        if family and not any(gpu_names.matches(gpus.type, name) for name in gpu_names.HOPPER_NAMES):
            check.add(f"{where}.type", f"{gpus.type!r} matches no {family.upper()} the way Slurm matches a type (a "
                      "case-insensitive part of the GPU's name, lower case with spaces as underscores), so slurmd's "
                      "autodetection and the health check would take every GPU for another model; types that "
                      f"work: {', '.join(gpu_names.working_types(family))}", gpus)
    check.positive(f"{where}.count", gpus.count, gpus)
    if gpus.autodetect == "nvidia" and check.version < AUTODETECT_NVIDIA:
        check.add(f"{where}.autodetect", f"AutoDetect=nvidia needs Slurm {AUTODETECT_NVIDIA} or newer; this cluster "
                                         f"runs {check.version} (use 'nvml' with slurm-wlm-nvml-plugin, or 'off')",
                  gpus)
    files, agree = device_files(check, f"{where}.files", profile)
    count_agrees = agree and gpus.count > 0
    placed: dict[int, int] = {}
    for socket, indices in sorted(gpus.sockets.items()):
        if not 0 <= socket < profile.sockets:
            check.add(f"{where}.sockets", f"socket {socket} does not exist: the profile has {profile.sockets} "
                                          f"socket{'s' if profile.sockets != 1 else ''} (0-{profile.sockets - 1})",
                      gpus)
        # With a count that disagrees with the device files, that disagreement is the one problem to report.
        beyond = [i for i in indices if not 0 <= i < gpus.count]
        if beyond and count_agrees:
            check.add(f"{where}.sockets", f"GPU{'s' if len(beyond) > 1 else ''} {_indices(beyond)} on socket "
                                          f"{socket} {'do' if len(beyond) > 1 else 'does'} not exist: the profile "
                                          f"has {gpus.count} GPUs (0-{gpus.count - 1})", gpus)
        for index in indices:
            if index in beyond:
                continue
            if index in placed:
                check.add(f"{where}.sockets", f"GPU {index} is placed on socket {placed[index]} and on socket "
                                              f"{socket}", gpus)
            else:
                placed[index] = socket
    return files


def _indices(indices: list[int]) -> str:
    """``4-7`` for a run, ``4, 6`` otherwise."""
    ordered = sorted(set(indices))
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(map(str, ordered))

