"""The stand-in for slurmctld and its commands (sinfo, scontrol, sbatch, squeue, scancel, srun), for the tiers that
cannot run real Slurm: many nodes on one machine, a clock the test moves, nodes that reboot, faults on demand. One
object holds the cluster (cluster.py); ``run(argv)`` answers a command as the real one prints, for a program that runs
argv (the gate, the exporter, the node's health check); ``shell(text)`` runs the controller's shell text in a real
shell with these commands on its PATH (roll, accept, admit, the deploy: shell.py), so drains.py's loops and sbatch's
here-documents run as they do over SSH.

What each command does follows slurmctld's source (node_mgr.c update_node, reservation.c, proc_req.c) as far as the
callers read it; tests/realslurm/test_standin.py runs the same steps on real slurmctld (22.05, 24.11, 26.05) and
compares what both print. What a stand-in cannot be, it says: jobs run here, at once, as root, on this machine's
filesystem (execute.py); there is no scheduler beyond "each node free, usable and in the job's partition"."""

from __future__ import annotations

import shlex
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import hostlist

from clusterforge.slurm.commands import Answer

from . import cluster, execute, printing
from .cluster import START, Job, Node, Partition, Reservation

UNREACHABLE = "Unable to contact slurm controller (connect failure)"
# sbatch's and scontrol's words for what slurmctld refuses (slurm_errno.c).
NODE_CONFIG = "Requested node configuration is not available"
TIME_LIMIT = "Requested time limit is invalid (missing or exceeds some limit)"
BAD_PARTITION = "Invalid partition name specified"
BAD_RESERVATION = "Requested reservation is invalid"
BAD_NODE = "Invalid node name specified"
BAD_STATE = "Invalid node state specified"
BAD_TRANSITION = "Invalid node state transition"   # 26.05's ESLURM_INVALID_NODE_STATE_TRANSITION
DUPLICATE = "Duplicate reservation name"
# The states squeue lists by default (squeue(1), --states): pending, running, and the others still in progress.
ACTIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING",
          "STAGE_OUT", "STOPPED")


@dataclass
class Slurm:
    nodes: dict[str, Node]
    partitions: dict[str, Partition] = field(default_factory=dict)
    release: str = "26.05"
    reservations: dict[str, Reservation] = field(default_factory=dict)
    jobs: dict[int, Job] = field(default_factory=dict)
    now: int = START
    next_job: int = 1000
    accounting: bool = True            # slurmdbd configured, as on clusterforge's clusters
    enforce_part_limits: str = "ALL"   # slurm.conf's EnforcePartLimits: ALL as clusterforge renders it, ANY, NO
    reboot_s: int = 30                 # from a reboot being issued to the node's registration
    # slurm.conf's ResumeTimeout: an issued reboot not registered within it times out (_timed_out). clusterforge's
    # (health.reboot_timeout, model/settings.py); Slurm's own default is 60.
    resume_timeout: int = 1200
    down: bool = False                 # slurmctld does not answer: every command fails as the real ones do
    # A command slurmctld refuses, and how: by its name ("scontrol"), or one of its requests by the name and the
    # request's first two words, options left out ("scontrol create reservation", "scontrol show reservation").
    refuse: dict[str, Answer] = field(default_factory=dict)
    # Nodes slurmctld refuses to update, one by one where ``refuse`` refuses every update: an update naming one fails
    # as update_node does for a state it will not set on that node (ESLURM_INVALID_NODE_STATE, slurm_errno.c's words),
    # and changes none of the nodes it names (drains.py asks one node a request, so which of several real slurmctld
    # changes before it stops is left open).
    refuse_nodes: set[str] = field(default_factory=set)
    asked: list[list[str]] = field(default_factory=list)
    shells: list[str] = field(default_factory=list)           # the shell texts run (shell())
    runner: execute.Runner = field(default_factory=execute.Runner)
    # slurmctld's answers one at a time: a program may ask from threads (the gate steps its nodes at once). Not kept
    # with the cluster (shell.save pickles it): each process holds its own, and a state file is flock'd (shell.py).
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _lock=threading.RLock())

    @classmethod
    def of(cls, names: Iterable[str], partition: str = "all", **settings) -> Slurm:
        """Idle registered nodes, all in one default partition without a time limit."""
        names = list(names)
        return cls({n: Node() for n in names}, {partition: Partition(names, default=True)}, **settings)

    # --- the clock ----------------------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Time passes: jobs end at their time, a reboot asked is issued once the node is idle, an issued reboot
        completes (the node registers again) or times out, each as slurmctld's background passes do it."""
        self.now += int(seconds)
        self.answer_registration_requests()
        for job in self.jobs.values():
            if job.state == "RUNNING" and job.ends_at is not None and job.ends_at <= self.now:
                job.state, job.ended = "COMPLETED", job.ends_at
        for name, node in self.nodes.items():
            if "REBOOT_ISSUED" in node.flags or node.booting:
                due = node.registers_at if node.registers_at is not None else node.issued_at + self.reboot_s
                if "REBOOT_ISSUED" in node.flags and node.issued_at + self.resume_timeout < min(due, self.now):
                    self._timed_out(node)
                if due <= self.now:
                    self._registered(name, node)
            elif "REBOOT_REQUESTED" in node.flags and self._reboot_now(name):
                self._issue(node)
        self.schedule()

    def _reboot_now(self, name: str) -> bool:
        """A reboot asked is sent to the node once it is idle and responding, or down (_node_needs_reboot,
        power_save.c in 26.05; _queue_reboot_msg, controller.c in 22.05 and 24.11); never to a node that never
        registered (UNKNOWN, no slurmd)."""
        base, flags = self.state_of(name)
        return (base == "IDLE" and "NOT_RESPONDING" not in flags) or base == "DOWN"

    def _issue(self, node: Node) -> None:
        """The reboot sent (the same passes): the node DOWN+REBOOT_ISSUED, " : reboot issued" added to its reason by
        SlurmUser (set_node_reason), its boot requested now (boot_req_time)."""
        node.flags = (node.flags - {"REBOOT_REQUESTED"}) | {"REBOOT_ISSUED"}
        node.base = "DOWN"
        node.issued_at, node.booting = self.now, True
        self._add_reason(node, "reboot issued")

    def _timed_out(self, node: Node) -> None:
        """No registration within ResumeTimeout of the reboot's issue: REBOOT_ISSUED goes and the node is DOWN with
        " : reboot timed out" added (22.05: node_mgr.c check_reboot_nodes, which also lifts the drain; 24.11:
        node_mgr.c check_node_timers; 26.05: power_save.c _do_power_work; both of these keep the drain). Its next
        state stays for a registration after all (ReturnToService=2, clusterforge's: _registered)."""
        node.flags.discard("REBOOT_ISSUED")
        if self.release == "22.05":
            node.flags.discard("DRAIN")
        node.base = "DOWN"
        self._add_reason(node, "reboot timed out")

    def _add_reason(self, node: Node, message: str) -> None:
        """set_node_reason (node_mgr.c): " : <message>" appended to a reason there (once), else the message; by
        SlurmUser."""
        if not node.reason:
            node.reason = message
        elif f" : {message}" not in node.reason:
            node.reason += f" : {message}"
        node.reason_by = f"slurm@{cluster.stamp(self.now)}"

    def _require_registration(self, node: Node) -> None:
        """slurmctld asks the node's slurmd to register again (node_mgr.c, _require_node_reg, on every release from
        22.05: called by update_node for an UNDRAIN, and for a RESUME of a drained or down node): the node is
        NOT_RESPONDING, and so takes no job, until it does. BootTime=None meanwhile (boot_time 0) is not kept."""
        node.flags.add("NOT_RESPONDING")
        node.registering = True

    def answer_registration_requests(self) -> None:
        """slurmctld's next background pass pings at once (controller.c, ping_nodes_now), a second at most: a node
        with a slurmd registers and responds again (node_mgr.c, validate_node_specs clears NOT_RESPONDING). A node
        that never registered (UNKNOWN: no slurmd) does not answer and stays not responding."""
        for node in self.nodes.values():
            if node.registering and node.base != "UNKNOWN":
                node.flags.discard("NOT_RESPONDING")
                node.registering = False

    def _registered(self, name: str, node: Node) -> None:
        """The node's slurmd registers after its reboot (node_mgr.c, validate_node_specs: a DOWN node REBOOT_ISSUED,
        or past ResumeTimeout with ReturnToService=2): REBOOT_ISSUED goes; where a next state was set (any but NO_VAL:
        nextstate=, or what an ASAP reboot set, proc_req.c _slurm_rpc_reboot_nodes) the drain goes too, whoever set
        it and when; DOWN with nextstate=down (" : reboot complete"), else IDLE; the reason goes with the drain
        (clusteracct_storage_g_node_up, _clear_reason). With no next state (24.11 on: an ASAP reboot without
        nextstate= of a node drained already) the drain and its reason stay."""
        node.flags -= {"REBOOT_ISSUED", "REBOOT_REQUESTED", "NOT_RESPONDING"}
        node.registering = node.booting = False
        node.registers_at = None
        node.boot = node.slurmd_start = self.now
        if node.next_state or node.undrain:
            node.flags.discard("DRAIN")
        if node.next_state == "DOWN":
            node.base = "DOWN"
            self._add_reason(node, "reboot complete")
        else:
            node.base = "IDLE"
        node.next_state, node.undrain = "", False
        self._clear_reason(node)
        if node.sick_after_boot:
            self._drain(node, node.sick_after_boot, "root")

    # --- what the commands read ---------------------------------------------------------------------------------

    def running_on(self, name: str) -> list[Job]:
        return [j for j in self.jobs.values() if j.state in ("RUNNING", "COMPLETING") and name in j.nodes]

    def state_of(self, name: str) -> tuple[str, set[str]]:
        """The node's base state and flags as slurmctld reports them now."""
        node = self.nodes[name]
        flags = set(node.flags)
        base = node.base
        if base == "IDLE" and self.running_on(name):
            # Some of its CPUs allocated, not all: MIXED, as the API makes it for sinfo and scontrol from the CPUs
            # allocated (src/api/node_info.c, _set_node_mixed_op).
            base = "MIXED" if self.cpus_allocated(name) < node.cpus else "ALLOCATED"
        for reservation in self._holding(name).values():
            flags.add("RESERVED")
            if reservation.maint:
                flags.add("MAINTENANCE")
        return base, flags

    def _holding(self, name: str) -> dict[str, Reservation]:
        """The active reservations that hold the node, by name."""
        return {n: r for n, r in self.reservations.items() if r.active(self.now) and name in r.names}

    def cpus_allocated(self, name: str) -> int:
        """The node's CPUs its running jobs hold (scontrol's CPUAlloc): each its ``cpus``, or the whole node."""
        cpus = self.nodes[name].cpus
        return min(cpus, sum(job.cpus or cpus for job in self.running_on(name)))

    def gpus_held(self, name: str) -> list[int]:
        """The node's GPUs its running jobs hold, by gres index: each its ``gpus``, an --exclusive one all of them
        (cons_tres gives a job the whole node's GRES with the node)."""
        node = self.nodes[name]
        count = int(node.gres.rsplit(":", 1)[1]) if node.gres else 0
        return sorted({i for job in self.running_on(name)
                       for i in (range(count) if "exclusive" in job.options else job.gpus)})

    def partitions_of(self, name: str) -> list[str]:
        return [p for p, partition in self.partitions.items() if name in partition.nodes]

    # --- the commands -------------------------------------------------------------------------------------------

    def __call__(self, argv: Sequence[str], timeout: float | None = None) -> Answer:
        return self.run(argv)

    def run(self, argv: Sequence[str], stdin: str = "", env: Mapping[str, str] | None = None) -> Answer:
        """``argv`` answered as the real command does; ``env``: the command's environment, of which the stand-in
        reads SLURM_TIME_FORMAT (scontrol's node records). One command at a time, from any thread, but for a job
        step's run (srun): that runs on its node, beside slurmctld, and steps on several nodes run at once."""
        argv = list(argv)
        with self._lock:
            answer = self._answer(argv, stdin, env)
        return self.srun(argv[1:]) if answer is None else answer

    def _answer(self, argv: list[str], stdin: str, env: Mapping[str, str] | None) -> Answer | None:
        """The answer to ``argv``; None for a job step to run (srun), outside the lock."""
        self.asked.append(argv)
        name = argv[0]
        if self.down and name != "srun":
            return Answer(1, "", printing.unreachable(name, argv))
        refused = self.refuse.get(name, self.refuse.get(_request(argv)))
        if refused is not None:
            return refused
        if name == "srun":
            return None
        if name == "sbatch":
            return self.sbatch(argv[1:], stdin)
        if name == "scontrol":
            return self.scontrol(argv[1:], (env or {}).get("SLURM_TIME_FORMAT", ""))
        command = {"sinfo": self.sinfo, "squeue": self.squeue, "scancel": self.scancel}.get(name)
        if command is None:
            raise AssertionError(f"not a Slurm command: {argv}")
        return command(argv[1:])

    def shell(self, command: str) -> Answer:
        """The controller's shell text, run by sh with these commands on its PATH (shell.py)."""
        from .shell import run_shell
        self.shells.append(command)
        return run_shell(self, command)

    def sinfo(self, args: list[str]) -> Answer:
        return Answer(0, printing.sinfo(self, args), "")

    def squeue(self, args: list[str]) -> Answer:
        return Answer(0, printing.squeue(self, args), "")

    def scontrol(self, args: list[str], time_format: str = "") -> Answer:
        words = [a for a in args if a not in ("-o", "--oneliner")]
        if words[:2] == ["show", "node"] or words[:2] == ["show", "nodes"]:
            names = hostlist.expand_hostlist(words[2]) if len(words) > 2 else sorted(self.nodes)
            missing = [n for n in names if n not in self.nodes]
            if missing:
                return Answer(1, f"Node {missing[0]} not found\n", "")   # on stdout, as scontrol prints it
            return Answer(0, "".join(printing.node_record(self, n, time_format) for n in names), "")
        if words[:2] == ["show", "hostnames"]:
            return Answer(0, "".join(f"{n}\n" for n in hostlist.expand_hostlist(words[2])), "")
        if words[:2] in (["show", "reservation"], ["show", "reservations"]):
            return self._show_reservations(words[2:])
        if words[:2] == ["show", "job"]:
            return self._show_jobs(words[2:])
        if words[:2] == ["create", "reservation"]:
            return self._create_reservation(words[2:])
        if words and words[0] == "delete":
            return self._delete_reservation(words[1:])
        if words and words[0] == "update":
            return self._update(words[1:])
        if words and words[0] == "reboot":
            return self._reboot(words[1:])
        if words and words[0] == "cancel_reboot":
            return self._cancel_reboot(words[1:])
        if words == ["ping"]:
            return Answer(0, "Slurmctld(primary) at ctl is UP\n", "")
        if words == ["reconfigure"]:
            return Answer(0, "", "")
        raise AssertionError(f"an scontrol request the stand-in does not know: {args}")

    def sbatch(self, args: list[str], stdin: str = "") -> Answer:
        options, rest = _options(args)
        script = (f"#!/bin/sh\n{options['wrap']}\n" if "wrap" in options   # sbatch(1) --wrap: sh runs the line
                  else open(rest[0]).read() if rest else stdin)
        for line in script.splitlines()[1:]:   # #SBATCH lines, before the first command; the command line wins
            if line.startswith("#SBATCH "):
                more, _ = _options(shlex.split(line[len("#SBATCH "):]))
                options = {**more, **options}
            elif line.strip() and not line.startswith("#"):
                break
        unknown = [p for p in options.get("partition", "").split(",") if p and p not in self.partitions]
        if unknown:   # sbatch asks slurmctld for the partition first, and says so itself
            return Answer(1, "", f"sbatch: error: invalid partition specified: {unknown[0]}\n")
        refused = self._refusal(options)
        if refused:
            return Answer(1, "", f"sbatch: error: Batch job submission failed: {refused}\n")
        job = Job(self.next_job, options.get("job-name", "sbatch"), "root", self._job_nodes(options), script,
                  options, submitted=self.now,
                  cpus=int(options["cpus-per-task"]) if options.get("cpus-per-task") else None)
        self.next_job += 1
        self.jobs[job.job_id] = job
        self.schedule()
        return Answer(0, f"{job.job_id}\n" if "parsable" in options else f"Submitted batch job {job.job_id}\n", "")

    def scancel(self, args: list[str]) -> Answer:
        for word in args:
            job = self.jobs.get(int(word))
            if job is None:
                return Answer(1, "", f"scancel: error: Kill job error on job id {word}: Invalid job id specified\n")
            if job.state in ACTIVE:   # a job that ran is signalled (SIGTERM: 0:15); one that waited has no exit
                job.exit_code = "0:15" if job.state != "PENDING" else "0:0"
                job.state, job.ended = "CANCELLED", self.now
        return Answer(0, "", "")

    def srun(self, args: list[str]) -> Answer:
        """A job step of its own, run here at once (every node shares this machine): what the gate reads a test's
        output back with."""
        _, command = _options(args)
        return self.runner.step(command)

    # --- scontrol's requests ------------------------------------------------------------------------------------

    def _update(self, words: list[str]) -> Answer:
        values = dict(w.split("=", 1) for w in words if "=" in w)
        if "PartitionName" in values:
            return self._update_partition(values)
        names = hostlist.expand_hostlist(values.get("NodeName", ""))
        state, reason = values.get("State", "").upper(), values.get("Reason", "")
        if any(n not in self.nodes for n in names):
            return Answer(1, "", f"slurm_update error: {BAD_NODE}\n")
        if state in ("DRAIN", "DOWN", "FAIL") and not reason:
            return Answer(1, "", "You must specify a reason when DOWNING or DRAINING a node. Request denied\n")
        if self.refuse_nodes.intersection(names):
            return Answer(1, "", f"slurm_update error: {BAD_STATE}\n")
        refused = ""
        for name in names:
            node = self.nodes[name]
            if reason:
                node.reason, node.reason_by = reason, f"root@{cluster.stamp(self.now)}"
            if state in ("DRAIN", "FAIL"):
                node.flags = (node.flags - {"DRAIN", "FAIL"}) | {state}
            elif state == "DOWN":
                node.base = "DOWN"
                for job in self.running_on(name):
                    job.state, job.exit_code, job.ended = "NODE_FAIL", "0:0", self.now
            elif state == "UNDRAIN":
                node.flags.discard("DRAIN")
                self._require_registration(node)
            elif state in ("RESUME", "IDLE"):
                if state == "RESUME" and ("DRAIN" in node.flags or node.base == "DOWN"):
                    self._require_registration(node)
                node.flags -= {"DRAIN", "FAIL", "REBOOT_REQUESTED", "REBOOT_ISSUED"}
                if node.base == "DOWN":
                    node.base = "IDLE"
                node.booting = False
            if state and not node.flags & {"REBOOT_REQUESTED", "REBOOT_ISSUED"}:
                node.next_state, node.undrain = "", False   # update_node: no reboot left, no next state (NO_VAL)
            if state in ("UNDRAIN", "RESUME") and node.base == "UNKNOWN" and self.release != "26.05":
                # 22.05 and 24.11 clear the flags, then refuse the node's base state as its new one (update_node has
                # no UNKNOWN case before 26.05): the drain is gone all the same, and scontrol fails.
                refused = f"slurm_update error: {BAD_STATE}\n"
            self._clear_reason(node)
        self.schedule()
        return Answer(1, "", refused) if refused else Answer(0, "", "")

    def _update_partition(self, values: dict[str, str]) -> Answer:
        """scontrol update PartitionName=... MaxTime=...: the one setting of a partition the stand-in keeps (scontrol's
        update_part.c takes minutes, [D-]HH:MM:SS or INFINITE/UNLIMITED; partition_mgr.c's update_part refuses a
        partition it does not have). Its pending jobs are tested against it again (schedule)."""
        partition = self.partitions.get(values["PartitionName"])
        if partition is None:
            return Answer(1, "", f"slurm_update error: {BAD_PARTITION}\n")
        if "MaxTime" in values:
            limit = values["MaxTime"]
            partition.max_minutes = None if limit.upper() in ("INFINITE", "UNLIMITED") else _minutes(limit)
        self.schedule()
        return Answer(0, "", "")

    def _clear_reason(self, node: Node) -> None:
        """A node neither drained, failing nor down keeps no reason: clusteracct_storage_g_node_up clears it as the
        node is up again. 24.11's returns before that where no accounting storage is configured (accounting_storage.c,
        PLUGIN_NOOP), so there the reason stays (tests/realslurm/test_standin.py); clusterforge's clusters have one."""
        if self.release == "24.11" and not self.accounting:
            return
        if not node.flags & {"DRAIN", "FAIL"} and node.base != "DOWN":
            node.reason = node.reason_by = ""

    def _drain(self, node: Node, reason: str, user: str) -> None:
        node.flags.add("DRAIN")
        node.reason, node.reason_by = reason, f"{user}@{cluster.stamp(self.now)}"

    def _reboot(self, words: list[str]) -> Answer:
        """scontrol reboot [ASAP] [nextstate=resume|down] [reason=...] <nodes> (proc_req.c, _slurm_rpc_reboot_nodes):
        a node with a reboot asked or issued already is left as it is; else the reboot is asked, with the reason given
        (else the node's, else "Reboot ASAP" or "reboot requested") and the next state given. ASAP drains the node
        meanwhile and, where it was not drained, sets the next state's UNDRAIN bit, which a cancel reads; without
        nextstate= 22.05 makes the next state RESUME, 24.11 on UNDRAIN where the node was not drained and none
        (NO_VAL) where it was. The reboot is issued once the node is idle (advance). 24.11 on name the nodes skipped
        (scontrol prints slurmctld's err_msg) and exit 0."""
        asap = "ASAP" in (w.upper() for w in words)
        values = {k.lower(): v for k, v in (w.split("=", 1) for w in words if "=" in w)}
        listed = [w for w in words if "=" not in w and w.upper() != "ASAP"]
        names = hostlist.expand_hostlist(listed[-1]) if listed else sorted(self.nodes)
        if any(n not in self.nodes for n in names):
            return Answer(1, "", f"scontrol_reboot_nodes error: {BAD_NODE}\n")
        skipped = []
        for name in names:
            node = self.nodes[name]
            if node.flags & {"REBOOT_REQUESTED", "REBOOT_ISSUED"} or node.base == "FUTURE":
                skipped.append(name)
                continue
            node.flags.add("REBOOT_REQUESTED")
            node.next_state, node.undrain = values.get("nextstate", "").upper(), False
            if values.get("reason"):
                node.reason, node.reason_by = values["reason"], f"root@{cluster.stamp(self.now)}"
            if asap:
                if self.release == "22.05" and not node.next_state:
                    node.next_state = "RESUME"
                if "DRAIN" not in node.flags:
                    node.undrain = True
                    node.next_state = node.next_state or "UNDRAIN"
                node.flags.add("DRAIN")
            if not node.reason:
                node.reason = "Reboot ASAP" if asap else "reboot requested"
                node.reason_by = f"root@{cluster.stamp(self.now)}"
        if skipped and self.release != "22.05":   # 24.11 on answer which were skipped, and succeed all the same
            return Answer(0, "", f"scontrol: error: Skipping reboot of nodes {hostlist.collect_hostlist(skipped)} due "
                                 "to current node state.\n")
        return Answer(0, "", "")

    def _cancel_reboot(self, words: list[str]) -> Answer:
        """scontrol cancel_reboot <nodes> (node_mgr.c update_node, NODE_STATE_REBOOT_CANCEL): a reboot asked and not
        issued is withdrawn. The drain goes with the reason, whoever set them since, where the next state has the
        UNDRAIN bit (_undo_reboot_asap): a node not drained when asked ASAP, and any whose next state is none (NO_VAL
        holds that bit too: 24.11 on, an ASAP reboot of a drained node without nextstate=; a reboot without ASAP and
        nextstate=); else drain and reason stay. A node with no reboot asked, or one issued (REBOOT_REQUESTED goes at
        the issue), is refused by _valid_node_state_change, each node on its own; 26.05 words it as a transition."""
        names = hostlist.expand_hostlist(words[-1]) if words else []
        if not names or any(n not in self.nodes for n in names):
            return Answer(1, "", f"slurm_update error: {BAD_NODE}\n")
        refused = ""
        for name in names:
            node = self.nodes[name]
            if "REBOOT_REQUESTED" not in node.flags:
                refused = BAD_TRANSITION if self.release == "26.05" else BAD_STATE
            else:
                node.flags.discard("REBOOT_REQUESTED")
                if node.undrain or not node.next_state:
                    node.flags.discard("DRAIN")
                    node.reason = node.reason_by = ""
                node.next_state, node.undrain = "", False   # no reboot left: NO_VAL
            self._clear_reason(node)
        # As after every node update (proc_req.c _slurm_rpc_update_node, queue_job_scheduler): a waiting job may
        # start on a node the withdrawal undrained.
        self.schedule()
        return Answer(1, "", f"slurm_update error: {refused}\n") if refused else Answer(0, "", "")

    def _show_reservations(self, words: list[str]) -> Answer:
        names = words or list(self.reservations)
        if words and words[0] not in self.reservations:
            return Answer(1, "", f"Reservation {words[0]} not found\n")
        if not names:
            return Answer(0, "No reservations in the system\n", "")
        return Answer(0, "".join(printing.reservation_record(self, n) for n in names), "")

    def _create_reservation(self, words: list[str]) -> Answer:
        values = dict(w.split("=", 1) for w in words if "=" in w)
        name = values["ReservationName"]
        if name in self.reservations:
            return Answer(1, "", f"Error creating the reservation: {DUPLICATE}\n")
        if any(n not in self.nodes for n in hostlist.expand_hostlist(values.get("Nodes", ""))):
            return Answer(1, "", f"Error creating the reservation: {BAD_NODE}\n")
        duration = values.get("Duration", "infinite")
        minutes = 365 * 24 * 60 if duration.lower() in ("infinite", "unlimited") else int(duration)
        self.reservations[name] = Reservation(values.get("Nodes", ""), values.get("Flags", ""),
                                              values.get("Users", "root"), self.now, minutes,
                                              values.get("PartitionName", ""))
        return Answer(0, f"Reservation created: {name}\n", "")

    def _delete_reservation(self, words: list[str]) -> Answer:
        values = dict(w.split("=", 1) for w in words if "=" in w)
        name = values.get("ReservationName") or values.get("reservationname", "")
        if self.reservations.pop(name, None) is None:
            return Answer(1, "", f"delete_reservation {' '.join(words)}: {BAD_RESERVATION}\n")
        self.schedule()
        return Answer(0, "", "")

    def _show_jobs(self, words: list[str]) -> Answer:
        ids = [int(w) for w in words] or sorted(self.jobs)
        if words and int(words[0]) not in self.jobs:
            return Answer(1, "", "slurm_load_jobs error: Invalid job id specified\n")
        if not ids:
            return Answer(0, "No jobs in the system\n", "")
        for job_id in ids:
            self.runner.look(self.jobs[job_id], self)
        return Answer(0, "".join(printing.job_record(self, self.jobs[i]) for i in ids), "")

    # --- jobs ---------------------------------------------------------------------------------------------------

    def _job_nodes(self, options: dict[str, str]) -> list[str]:
        if options.get("nodelist"):
            return hostlist.expand_hostlist(options["nodelist"])
        partition = self._partition(options)
        count = int(options.get("nodes", "1").split("-")[0])
        return partition.nodes[:count] if partition else []

    def _partition(self, options: dict[str, str]) -> Partition | None:
        named = options.get("partition", "")
        if not named:
            return next((p for p in self.partitions.values() if p.default), None)
        return self.partitions.get(named.split(",")[0])

    def _requested(self, options: dict[str, str]) -> list[Partition]:
        """The partitions the job names (those that exist), or the default one."""
        named = [self.partitions[p] for p in options.get("partition", "").split(",") if p in self.partitions]
        return named or [p for p in self.partitions.values() if p.default]

    def _refusal(self, options: dict[str, str]) -> str:
        """What slurmctld refuses at submission (job_mgr.c, _job_create; slurm_errno.c's words)."""
        if any(p and p not in self.partitions for p in options.get("partition", "").split(",")):
            return BAD_PARTITION
        if options.get("reservation") and options["reservation"] not in self.reservations:
            return BAD_RESERVATION
        partitions = self._requested(options)
        nodes = self._job_nodes(options)
        if any(n not in self.nodes for n in nodes) or not partitions:
            return BAD_NODE if any(n not in self.nodes for n in nodes) else NODE_CONFIG
        fitting = [p for p in partitions if set(nodes) <= set(p.nodes)]
        if not fitting:
            return NODE_CONFIG
        minutes = _minutes(options.get("time", ""))
        over = [minutes is not None and p.max_minutes is not None and minutes > p.max_minutes for p in partitions]
        # job_mgr.c, _part_access_check: ALL refuses a job over any partition's limit, ANY one over every one's;
        # NO takes it, and it waits (Reason=PartitionTimeLimit) for ever.
        if (self.enforce_part_limits == "ALL" and any(over)) or (self.enforce_part_limits == "ANY" and all(over)):
            return TIME_LIMIT
        return ""

    def usable(self, name: str, job: Job) -> bool:
        """Whether the job may start on the node now: available to it, no reboot pending, and idle, or (cons_tres
        sharing a node's free CPUs) running others' jobs with CPUs enough left for a job that asks a count of CPUs
        (--cpus-per-task), no GPU and not the whole node."""
        base, flags = self.state_of(name)
        if flags & {"REBOOT_REQUESTED", "REBOOT_ISSUED"} or not self._available(name, job):
            return False
        return base == "IDLE" or (base == "MIXED" and self._shares(name, job))

    def _shares(self, name: str, job: Job) -> bool:
        """Whether cons_tres gives the job CPUs beside the node's running jobs: it asks a count of them
        (--cpus-per-task), that many are free, and it asks no GPU and not the whole node."""
        return (job.cpus is not None and not {"exclusive", "gres", "gpus"} & set(job.options)
                and self.cpus_allocated(name) + job.cpus <= self.nodes[name].cpus)

    def schedule(self) -> None:
        """Start each pending job whose nodes are all usable, in submission order; one that waits is given
        slurmctld's reason where the stand-in knows it (wait_reason)."""
        for job in sorted(self.jobs.values(), key=lambda j: j.job_id):
            if job.state != "PENDING":
                continue
            reason = self.wait_reason(job)
            if reason:
                job.reason = reason
            elif job.nodes and all(self.usable(n, job) for n in job.nodes):
                # select_nodes (node_scheduler.c): a job given its nodes waits for nothing (WAIT_NO_REASON)
                job.state, job.started, job.reason = "RUNNING", self.now, "None"
                self.runner.start(job, self)

    def wait_reason(self, job: Job) -> str:
        """Why a pending job waits, as scontrol prints it: its time limit over the MaxTime of every partition it may
        run in, lowered since it was accepted (job_limits_check, job_mgr.c, from _job_runnable_test2 in
        job_scheduler.c: PartitionTimeLimit); or one of its nodes running another job (select_nodes,
        node_scheduler.c: ESLURM_NODES_BUSY, Resources). "" where it may start."""
        minutes = _minutes(job.options.get("time", ""))
        fitting = [p for p in self._requested(job.options) if set(job.nodes) <= set(p.nodes)]
        if minutes is not None and fitting and all(
                p.max_minutes is not None and minutes > p.max_minutes for p in fitting):
            return "PartitionTimeLimit"
        unavailable = [n for n in job.nodes if not self._available(n, job)]
        if job.reason.startswith("ReqNodeNotAvail") and unavailable:
            return job.reason   # job_scheduler.c, schedule(): a job waiting for its nodes keeps its reason
        partition = fitting[0] if fitting else None
        if partition is not None and sum(self._up(n) for n in partition.nodes) < len(job.nodes):
            # job_scheduler.c, schedule(): fewer of the partition's nodes up and undrained than the job needs
            rebooting = any(self.nodes[n].flags & {"REBOOT_REQUESTED", "REBOOT_ISSUED"} for n in partition.nodes)
            return ("Nodes_required_for_job_are_DOWN,_DRAINED" + (",_REBOOTING" if rebooting else "")
                    + "_or_reserved_for_jobs_in_higher_priority_partitions")
        if any(self.running_on(n) and not self._shares(n, job) for n in job.nodes):
            return "Resources"
        if any(self._maint_held(n, job) for n in job.nodes):
            return "ReqNodeNotAvail,_Reserved_for_maintenance"   # node_scheduler.c, ESLURM_RESERVATION_MAINT
        if unavailable:
            # node_scheduler.c (ESLURM_NODE_NOT_AVAIL): the nodes it asked for that are not up (down, not responding)
            # are named; a drained one is up, and then Slurm can only guess. scontrol prints the reason's spaces as _
            down = [n for n in unavailable if self._down(n)]
            return ("ReqNodeNotAvail,_" + (f"UnavailableNodes:{hostlist.collect_hostlist(down)}" if down
                                           else "May_be_reserved_for_other_job"))
        return ""

    def _up(self, name: str) -> bool:
        """In slurmctld's avail_node_bitmap: up, responding, neither drained nor failing."""
        return not self._down(name) and not self.state_of(name)[1] & {"DRAIN", "FAIL"}

    def _down(self, name: str) -> bool:
        base, flags = self.state_of(name)
        return base in ("DOWN", "UNKNOWN") or "NOT_RESPONDING" in flags

    def _maint_held(self, name: str, job: Job) -> bool:
        held = {n for n, r in self._holding(name).items() if r.maint}
        return bool(held) and job.options.get("reservation") not in held

    def _available(self, name: str, job: Job) -> bool:
        """Up, not drained or failing, and in no reservation but the job's: what ReqNodeNotAvail is about."""
        held = self._holding(name)
        return self._up(name) and (not held or job.options.get("reservation") in held)

    def place(self, user: str, names: Iterable[str], seconds: int, name: str = "train",
              cpus: int | None = None, gpus: tuple[int, ...] = ()) -> Job:
        """A user's job already running on ``names`` until ``seconds`` from now (a job the test did not submit);
        with ``cpus``, holding only so many of each node's CPUs (the node MIXED); with ``gpus``, those GPUs of each
        node (gres indices, sinfo's GresUsed)."""
        job = Job(self.next_job, name, user, list(names), state="RUNNING", submitted=self.now, started=self.now,
                  ends_at=self.now + seconds, cpus=cpus, gpus=tuple(gpus))
        self.next_job += 1
        self.jobs[job.job_id] = job
        return job


def _request(argv: list[str]) -> str:
    """The command's name and its request's first two words, as ``refuse`` names a request: scontrol's
    "scontrol -o show reservation" is "scontrol show reservation"."""
    words = [a for a in argv[1:] if not a.startswith("-")]
    return " ".join([argv[0], *words[:2]])


def _options(args: list[str]) -> tuple[dict[str, str], list[str]]:
    """Long options (--name=value, --flag) up to the first other word; the rest."""
    options: dict[str, str] = {}
    for i, arg in enumerate(args):
        if not arg.startswith("--"):
            return options, args[i:]
        key, _, value = arg[2:].partition("=")
        options[key] = value
    return options, []


def _minutes(text: str) -> int | None:
    """sbatch's --time: minutes, or [D-]HH:MM:SS (the forms clusterforge writes)."""
    if not text:
        return None
    if text.isdigit():
        return int(text)
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    hours, mins, secs = ([0] * (3 - len(parts)) + parts) if len(parts) < 3 else parts
    return int(days or 0) * 1440 + hours * 60 + mins + (1 if secs else 0)


