"""What the stand-in's commands print, as the real ones do: sinfo's -O and --format fields, squeue's, and scontrol's
node, reservation and job records (the keys clusterforge reads, in the real order; tests/slurm/captures holds the
real ones, and tests/slurm_standin/test_against_captures.py compares)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import hostlist

from . import cluster

if TYPE_CHECKING:
    from .slurm import Slurm

# Each command's words where slurmctld does not answer (the API call that failed, as each prints it).
_UNREACHABLE = {"sinfo": "slurm_load_partitions: {}", "squeue": "slurm_load_jobs error: {}",
                "sbatch": "sbatch: error: Batch job submission failed: {}",
                "scancel": "scancel: error: Kill job error on job id {job}: {}"}
_SCONTROL_UNREACHABLE = {"node": "slurm_load_node error: {}", "job": "slurm_load_jobs error: {}",
                         "delete": "delete_reservation {target}: {}",   # scontrol.c, _delete_it
                         "reservation": "slurm_load_reservations error: {}", "ping": "slurm_ping error: {}",
                         # create_res.c, scontrol_create_res: slurm_perror("Error creating the reservation"), whether
                         # slurmctld refused or never answered (clusterforge creates reservations alone)
                         "create": "Error creating the reservation: {}"}


def unreachable(name: str, argv: list[str]) -> str:
    from .slurm import UNREACHABLE
    if name == "scontrol":
        what = next((w for w in argv[1:] if w.rstrip("s") in _SCONTROL_UNREACHABLE), "update")
        template = _SCONTROL_UNREACHABLE.get(what.rstrip("s"), "slurm_update error: {}")
    else:
        template = _UNREACHABLE[name]
    return template.format(UNREACHABLE, job=argv[-1], target=argv[-1]) + "\n"


# --- sinfo --------------------------------------------------------------------------------------------------------

def _node_fields(slurm: Slurm, name: str, partition: str) -> dict[str, str]:
    node = slurm.nodes[name]
    base, flags = slurm.state_of(name)
    part = slurm.partitions[partition]
    used = "gpu:0" if slurm.release == "22.05" else "(null)"
    if node.gres:
        # gres.c, _node_gres_used: once the node's slurmd has registered its GPUs (their File=, topo_cnt), each type
        # with the indices jobs hold as bit_fmt writes them (0-2, 0,3) or N/A for none; before that only the count
        kind = node.gres.rsplit(":", 1)[0]
        held = slurm.gpus_held(name)
        indices = hostlist.collect_hostlist([str(i) for i in held]).strip("[]") if held else "N/A"
        used = f"{kind}:{len(held)}" + (f"(IDX:{indices})" if node.boot is not None else "")
    return {"NodeList": name, "NodeHost": name, "Partition": partition + ("*" if part.default else ""),
            "PartitionName": partition, "Time": cluster.time_string(part.max_minutes),
            "StateLong": cluster.long_state(base, flags),
            "StateComplete": cluster.complete(base, flags).lower(), "Gres": node.gres or "(null)",
            "GresUsed": used, "Reason": node.reason or "none", "CPUs": str(node.cpus)}


# sinfo --format's letters (sinfo(1)): the ones clusterforge's commands and tests use.
_LETTERS = {"N": "NodeList", "n": "NodeHost", "T": "StateLong", "E": "Reason", "P": "Partition", "R": "PartitionName",
            "l": "Time", "G": "Gres", "c": "CPUs"}


def _formatted(fmt: str, value_of: Callable[[str], str]) -> str:
    """A --format of sinfo's or squeue's: each %[.-][width]<letter> the letter's value (unpadded: clusterforge
    names no width), the rest as written."""
    return re.sub(r"%[.-]?\d*([A-Za-z])", lambda m: value_of(m.group(1)), fmt)


def _Format_line(spec: str, values: dict[str, str]) -> str:
    """-O Field:|,Field:| ... each field then its suffix, unpadded (clusterforge writes a width of nothing)."""
    out = []
    for item in spec.split(","):
        name, _, rest = item.partition(":")
        out.append(values[name] + rest.lstrip("0123456789."))
    return "".join(out)


def sinfo(slurm: Slurm, args: list[str]) -> str:
    values = {}
    flags = set()
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep:
            values[{"--node": "--nodes", "-n": "--nodes", "-t": "--states", "-o": "--format",
                    "-O": "--Format"}.get(key, key)] = value
        else:
            flags.add(arg)
    names = hostlist.expand_hostlist(values["--nodes"]) if "--nodes" in values else sorted(slurm.nodes)
    wanted = values.get("--states", "").lower().split(",") if "--states" in values else []
    lines: list[str] = []
    for partition, part in slurm.partitions.items():
        for name in (n for n in names if n in part.nodes):
            fields = _node_fields(slurm, name, partition)
            if wanted and not _in_states(fields, wanted):
                continue
            line = (_Format_line(values["--Format"], fields) if "--Format" in values
                    else _formatted(values.get("--format", "%P %.5a %.10l %.6D %.6t %N"),
                                    lambda letter: fields[_LETTERS[letter]]))
            lines.append((name, line))
    if "--Node" in flags or "-N" in flags:
        ordered = [line for _, line in sorted(lines, key=lambda item: item[0])]   # by node, partitions as configured
    else:   # by partition, nodes of one line merged: for one node's own fields, each distinct line once
        ordered = list(dict.fromkeys(line for _, line in lines))
    header = "" if {"--noheader", "-h"} & flags else "HEADER\n"
    return header + "".join(f"{line}\n" for line in ordered)


def _in_states(fields: dict[str, str], wanted: list[str]) -> bool:
    """sinfo --states: a base state or a flag (drain matches drained and draining; sinfo.c _filter_out)."""
    complete = fields["StateComplete"].split("+")
    return any(w in complete or fields["StateLong"].rstrip("*$^@") == w for w in wanted)


# --- squeue -------------------------------------------------------------------------------------------------------

_JOB_LETTERS = {"i": lambda j: str(j.job_id), "A": lambda j: str(j.job_id), "u": lambda j: j.user,
                "N": lambda j: hostlist.collect_hostlist(j.nodes) if j.state != "PENDING" else "",
                "T": lambda j: j.state, "t": lambda j: _compact(j.state), "j": lambda j: j.name,
                "P": lambda j: j.partition or "all"}


def _compact(state: str) -> str:
    return {"PENDING": "PD", "RUNNING": "R", "COMPLETING": "CG"}.get(state, state[:2])


def squeue(slurm: Slurm, args: list[str]) -> str:
    from .slurm import ACTIVE
    values = dict(a.partition("=")[::2] for a in args if "=" in a)
    fmt = values.get("--format", values.get("-o", "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"))
    nodes = set(hostlist.expand_hostlist(values["--nodelist"])) if "--nodelist" in values else None
    lines = []
    # squeue's default order (squeue(1), --sort "P,t,-p"): by partition, then the waiting before the running
    for job in sorted(slurm.jobs.values(), key=lambda j: (j.partition, j.state != "PENDING", j.job_id)):
        if job.state not in ACTIVE or (nodes is not None and not nodes & set(job.nodes)):
            continue
        lines.append(_formatted(fmt, lambda letter: _JOB_LETTERS[letter](job)))
    header = "" if {"--noheader", "-h"} & set(args) else "HEADER\n"
    return header + "".join(f"{line}\n" for line in lines)


# --- scontrol -----------------------------------------------------------------------------------------------------

def node_record(slurm: Slurm, name: str, time_format: str = "") -> str:
    """``scontrol -o show node``'s line of the node (26.05's keys, those clusterforge reads in their places; 22.05
    names no reservation), its times in ``time_format`` (SLURM_TIME_FORMAT's) where given."""
    node = slurm.nodes[name]
    base, flags = slurm.state_of(name)
    boot = cluster.shown(node.boot, time_format) if node.boot is not None else "None"
    # node_info.c: "None" for a slurmd_start_time of 0, as slurmctld holds it until the node's slurmd registers
    started = cluster.shown(node.slurmd_start, time_format) if node.slurmd_start is not None else "None"
    reservation = next((r for r, res in slurm.reservations.items()
                        if res.active(slurm.now) and name in res.names), "")
    alloc = slurm.cpus_allocated(name) if base in ("ALLOCATED", "MIXED") else 0
    return (f"NodeName={name} Arch=x86_64 CoresPerSocket=1  CPUAlloc={alloc} CPUEfctv={node.cpus} "
            f"CPUTot={node.cpus} CPULoad=0.00 AvailableFeatures=(null) ActiveFeatures=(null) "
            f"Gres={node.gres or '(null)'} NodeAddr={name} NodeHostName={name}  RealMemory=1000 AllocMem=0 "
            f"FreeMem=N/A Sockets={node.cpus} Boards=1 State={cluster.complete(base, flags)} ThreadsPerCore=1 "
            f"TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A"
            # node_info.c: a next state is printed while a reboot is asked or issued
            + (f" NextState={node.next_state}" if node.next_state and flags & {"REBOOT_REQUESTED", "REBOOT_ISSUED"}
               else "")
            + f" Partitions={','.join(slurm.partitions_of(name))}  BootTime={boot} SlurmdStartTime={started} "
            "LastBusyTime=Unknown ResumeAfterTime=None CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= "
            "CurrentWatts=0 AveWatts=0 "
            + (f" Reason={node.reason} [{_set_by(node.reason_by, time_format)}]" if node.reason else "")
            + (f" ReservationName={reservation}" if reservation and slurm.release != "22.05" else "") + "\n")


def _set_by(reason_by: str, time_format: str) -> str:
    """The reason's "user@time", its time in ``time_format`` (the stand-in keeps it in the standard form)."""
    import calendar
    import time
    user, _, when = reason_by.rpartition("@")
    if not time_format or not user:
        return reason_by
    seconds = calendar.timegm(time.strptime(when, "%Y-%m-%dT%H:%M:%S"))
    return f"{user}@{cluster.shown(seconds, time_format)}"


def reservation_record(slurm: Slurm, name: str) -> str:
    """``scontrol -o show reservation``'s line (26.05's keys; 22.05 and 24.11 lack AllowedPartitions and QOS)."""
    res = slurm.reservations[name]
    names = res.names
    newer = slurm.release == "26.05"
    return (f"ReservationName={name} StartTime={cluster.stamp(res.start)} "
            f"EndTime={cluster.stamp(res.start + res.minutes * 60)} Duration={cluster.time_string(res.minutes)} "
            f"Nodes={hostlist.collect_hostlist(names)} NodeCnt={len(names)} CoreCnt={2 * len(names)} "
            f"Features=(null) PartitionName={res.partition or '(null)'} Flags={res.flags or '(null)'}"
            f"{',SPEC_NODES' if res.flags else 'SPEC_NODES'} TRES=cpu={2 * len(names)} "
            + ("AllowedPartitions=(null) QOS=(null) " if newer else "")
            + f"Users={res.users} Groups=(null) Accounts=(null) Licenses=(null) "
            f"State={'ACTIVE' if res.active(slurm.now) else 'INACTIVE'} BurstBuffer=(null) MaxStartDelay=(null)\n")


def job_record(slurm: Slurm, job) -> str:
    """``scontrol -o show job``'s line (the keys clusterforge reads, in their order)."""
    start = job.started if job.started is not None else slurm.now
    run = ((job.ended if job.ended is not None else slurm.now) - start) if job.started is not None else 0
    limit = job.options.get("time", "")
    nodes = hostlist.collect_hostlist(job.nodes)
    uid = 0 if job.user == "root" else 1000
    return (f"JobId={job.job_id} JobName={job.name} UserId={job.user}({uid}) GroupId={job.user}({uid}) "
            f"MCS_label=N/A Priority=1 Nice=0 Account=(null) QOS=normal JobState={job.state} "
            f"Reason={job.reason} Dependency=(null) Requeue={0 if 'no-requeue' in job.options else 1} Restarts=0 "
            f"BatchFlag=1 Reboot=0 ExitCode={job.exit_code} RunTime={cluster.clock(run)} "
            f"TimeLimit={cluster.clock(int(limit) * 60) if limit.isdigit() else 'UNLIMITED'} "
            f"SubmitTime={cluster.stamp(job.submitted)} StartTime={cluster.stamp(start)} "
            f"Partition={job.partition or next(iter(slurm.partitions), 'all')} "
            + (f"Reservation={job.options['reservation']} " if job.options.get("reservation") else "")   # else none
            # a job that waits has neither (26.05 prints no NodeList= or BatchHost= for it)
            + (f"NodeList={nodes} BatchHost={job.nodes[0]} " if job.started is not None and job.nodes else "")
            + f"NumNodes={len(job.nodes) or 1} Command=(null) StdOut={job.stdout or '(null)'}\n")
