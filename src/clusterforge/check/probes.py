"""The checks: each reads a host with read-only commands through ``ctx.run`` and compares what it read with the
inventory (parse.py, slurm_parse.py, compare.py). They run the same under `clusterforge check` and as
pytest-testinfra tests (acceptance.py). No command here changes a host; only --smoke submits jobs."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from ..accounts import controller
from ..admission import records as node_records
from ..health import parse
from ..slurm import nodes as node_reader
from ..slurm import controller as slurmctld
from ..slurm import reservations
from ..slurm import jobs as slurm_jobs
from ..slurm.parse import ParseError
from ..model import Machine, ValidCluster
from ..reach.controller import Controller, ControllerRefused, ControllerUnreachable
from ..reach.ssh import Run
from ..model.settings import HEALTH_PROGRAM
from ..render import access as access_files
from ..render.identity import home_directory
from ..render.stamp import PATH as STAMP
from ..render.stamp import NotAStamp, Stamp
from . import compare, slurm_parse
from . import deployed as deployed_compare
from . import directory as directory_compare
from . import homes as homes_compare
from . import people as people_compare
from . import records as records_compare
from . import repair as repair_compare
from . import stack as stack_compare
from .findings import Finding, Outcome

@dataclass(frozen=True, slots=True)
class Context:
    valid: ValidCluster
    machine: Machine
    run: Run
    credential: str | None = None  # a munge credential made on the controller, for the auth check
    memory_tolerance: float | None = None  # a fraction; None: the inventory's (Acceptance)
    limit: frozenset[str] | None = None  # nodes --limit keeps; None: all
    # Where the deployed check leaves each host's stamp (None: it has none), for the view across hosts (run.py).
    stamps: dict[str, Stamp | None] | None = None

    @property
    def controller(self) -> Controller:
        """This host as the cluster's controller (the checks that run there)."""
        return Controller(self.machine.name, self.run)

    @property
    def tolerance(self) -> float:
        given = self.memory_tolerance
        return given if given is not None else self.valid.acceptance.memory_tolerance / 100


class Failed(Exception):
    """A command of the check failed: reported as a finding of that check."""


def _read(ctx: Context, command: str, what: str | None = None) -> str:
    answer = ctx.run(command)
    if answer.rc != 0:
        raise Failed(f"`{what or command}` failed: {answer.why}")
    return answer.out


def _has(ctx: Context, program: str) -> bool:
    return ctx.run(f"command -v {program}").rc == 0


def expected_units(machine: Machine, valid: ValidCluster) -> list[str]:
    """The daemons the deploy runs on this machine (roles/daemons.py, roles/auth.py): munged everywhere with
    auth/munge, slurmctld, slurmdbd, slurmd by group, sackd on a login host that runs no other Slurm daemon
    with auth/slurm, slurmrestd on its host (roles/rest.py), the admission gate on the controller where a profile
    has admission (roles/gate.py), and automatic repair there where a profile repairs (roles/repair.py)."""
    groups = set(machine.groups)
    units = ["munge"] if valid.auth == "munge" and machine.runs_slurm else []
    units += [unit for group, unit in (("controller", "slurmctld"), ("database", "slurmdbd"), ("compute", "slurmd"))
              if group in groups]
    if valid.auth == "slurm" and "login" in groups and not {"compute", "controller"} & groups:
        units.append("sackd")
    if "rest" in groups:
        units.append("slurmrestd")
    if "controller" in groups and valid.admission:
        units.append("clusterforge-gate")
    if "controller" in groups and valid.repair is not None:
        units.append("clusterforge-repair")
    return units


def daemons(ctx: Context) -> tuple[str, list[Finding]]:
    units = expected_units(ctx.machine, ctx.valid)
    states = _read(ctx, f"systemctl is-active {' '.join(units)} || true", "systemctl is-active").split()
    problems = [Finding(f"{unit} is {state}") for unit, state in zip(units, states) if state != "active"]
    return ", ".join(f"{u} {s}" for u, s in zip(units, states)), problems


def hardware(ctx: Context) -> tuple[str, list[Finding]]:
    node = ctx.machine.node
    assert node is not None
    return compare.hardware(node.profile, parse.slurmd_config(_read(ctx, "slurmd -C")), ctx.tolerance)


def gpus(ctx: Context) -> tuple[str, list[Finding]]:
    node = ctx.machine.node
    assert node is not None and node.profile.gpus is not None
    files = node.device_files
    listing = _read(ctx, "for f in " + " ".join(shlex.quote(f) for f in files) + "; do "
                    'if [ -c "$f" ]; then echo "$f char"; elif [ -e "$f" ]; then echo "$f other"; '
                    'else echo "$f missing"; fi; done', "device files")
    detail, problems = compare.device_files(files, parse.device_listing(listing))
    if not _has(ctx, "nvidia-smi"):
        return f"{detail}; no nvidia-smi", problems
    query = parse.nvidia_smi_query(_read(ctx, "nvidia-smi -q"))
    topology = parse.nvidia_smi_topology(_read(ctx, "nvidia-smi topo -m"))
    smi_detail, smi_problems = compare.gpus(node.profile, files, query, topology)
    return f"{detail}; {smi_detail}", problems + smi_problems


def infiniband(ctx: Context) -> tuple[str, list[Finding]]:
    if not _has(ctx, "ibstat"):
        return "no ibstat", []
    return compare.infiniband(parse.ibstat(_read(ctx, "ibstat")))


def health(ctx: Context) -> tuple[str, list[Finding]]:
    """The node's own health check, as installed (`clusterforge-health report`: its probes, read-only): the same
    findings in the same words as the drains it sets."""
    if not _has(ctx, HEALTH_PROGRAM):
        return "", [Finding(f"{HEALTH_PROGRAM} is not installed: the deploy installs it")]
    # Without a PATH, as slurmd runs it: the program then takes root's usual one. sudo's secure_path would be kept
    # otherwise, which on Debian forky leaves /usr/local out, where a site's tools may be.
    answer = ctx.run(f"env -u PATH {HEALTH_PROGRAM} report")
    try:
        report = json.loads(answer.out)
        found = report["findings"]
    except (ValueError, KeyError, TypeError):
        raise Failed(f"`{HEALTH_PROGRAM} report` failed: {answer.why}") from None
    drains = [f["reason"] for f in found if f["action"] == "drain"]
    recorded = [f["reason"] for f in found if f["action"] != "drain"]
    detail = "; ".join([f"{len(drains)} finding(s)" if drains else "healthy",
                        *(f"recorded: {r}" for r in recorded), *report.get("notes", [])])
    return detail, [Finding(reason) for reason in drains]


def stack(ctx: Context) -> tuple[str, list[Finding]]:
    """The pinned packages at their versions and held, the GPU stack's daemons, the driver the kernel runs."""
    valid, machine = ctx.valid, ctx.machine
    names = " ".join(shlex.quote(n) for n in stack_compare.names(valid, machine))
    packages = stack_compare.dpkg(_read(ctx, f"dpkg-query -W -f='${{Package}} ${{db:Status-Abbrev}} ${{Version}}\\n' "
                                             f"{names} 2>/dev/null; true", "dpkg-query"))
    units = stack_compare.units(valid, machine)
    states = dict(zip(units, _read(ctx, f"systemctl is-active {' '.join(units)} || true", "systemctl is-active")
                      .split())) if units else {}
    smi = None
    if stack_compare.has_driver(valid, machine) and _has(ctx, "nvidia-smi"):
        answer = ctx.run("nvidia-smi --query-gpu=driver_version --format=csv,noheader")
        smi = (answer.rc, answer.out + answer.err)
    return stack_compare.compare(valid, machine, packages, states, smi)


def auth(ctx: Context) -> tuple[str, list[Finding]]:
    """The controller answers this host's Slurm commands (`scontrol ping`: signed and checked with the cluster's
    munge key or slurm.key, through the local daemon or sackd); with munge, a credential made on the controller
    decodes here."""
    problems, seen = [], []
    ping = ctx.run(slurmctld.PING)
    if ping.rc != 0 or "DOWN" in ping.out:
        # Only the status line: scontrol adds a banner. With auth/slurm a host whose slurmd or sackd is down gets no
        # credential and sees the controller DOWN, though it runs.
        said = next((line for line in ping.out.splitlines() if "Slurmctld" in line), "") or ping.why
        problems.append(Finding(f"{slurmctld.PING} from here: {said.strip()}"))
    else:
        seen.append(f"{slurmctld.PING} UP")
    if ctx.valid.auth == "munge":
        if ctx.credential is None:
            problems.append(Finding("could not check: the controller made no munge credential to decode here",
                                    "unchecked"))
        else:
            # The credential is a short-lived token, not the key; it is never printed.
            decoded = ctx.run(f"printf %s {shlex.quote(ctx.credential)} | unmunge")
            if decoded.rc != 0:
                problems.append(Finding(f"unmunge of the controller's credential: {decoded.why}"))
            else:
                seen.append("controller's munge credential decodes")
    return ", ".join(seen) or f"{slurmctld.PING} fails", problems


def slurm_nodes(ctx: Context) -> tuple[str, list[Finding]]:
    found = {n.name: n for n in node_reader.parse_show(_read(ctx, shlex.join(node_reader.show_argv())))}
    held = reservations.held(ctx.controller.reservations())
    return compare.slurm_nodes(ctx.valid, found, set(ctx.limit) if ctx.limit is not None else None, held)


def partitions(ctx: Context) -> tuple[str, list[Finding]]:
    found = slurm_parse.partitions(_read(ctx, slurmctld.SHOW_PARTITIONS))
    qos = slurm_parse.column(_read(ctx, "sacctmgr -nP show qos format=name"))
    return compare.slurm_partitions(ctx.valid, found, qos)


def topology(ctx: Context) -> tuple[str, list[Finding]]:
    answer = ctx.run(slurmctld.SHOW_TOPOLOGY)
    if answer.rc != 0 and ctx.valid.topology is None:
        return "no fabric (flat)", []
    if answer.rc != 0:
        raise Failed(f"`{slurmctld.SHOW_TOPOLOGY}` failed: {answer.why}")
    return compare.slurm_topology(ctx.valid, slurm_parse.topology(answer.out))


def slurmdbd(ctx: Context) -> tuple[str, list[Finding]]:
    clusters = slurm_parse.column(_read(ctx, "sacctmgr -nP show cluster format=cluster"))
    if ctx.valid.name not in clusters:
        return (f"clusters {', '.join(clusters) or 'none'}",
                [Finding(f"slurmdbd answers but has no cluster {ctx.valid.name}")])
    return f"answers, has cluster {ctx.valid.name}", []


def users(ctx: Context) -> tuple[str, list[Finding]]:
    """Every user the inventory declares can submit: the controller resolves the name, and slurmctld holds it with
    its uid and default account (accounts/controller.py says how it can hold one without)."""
    names = controller.declared_users(ctx.valid)
    held, unix = controller.parse(_read(ctx, controller.read_command(names), "slurmctld's users").splitlines())
    view = controller.users_view(ctx.valid, held, unix)
    problems = [Finding(view.unknown_text())] if view.unknown else []
    if view.stale:
        problems.append(Finding(f"slurmctld holds {view.stale_text(held)}, and refuses their jobs: run the deploy, "
                                "which makes slurmctld learn them again without a restart"))
    return f"{len(names) - len(view.unknown) - len(view.stale)}/{len(names)} declared users can submit", problems


def smoke_hostname(ctx: Context) -> tuple[str, list[Finding]]:
    """hostname as a job step on all nodes of the default partition: every node runs a step."""
    part = next(p for p in ctx.valid.partitions if p.spec.default)
    nodes = [n for n in part.nodes if ctx.limit is None or n in ctx.limit]
    if not nodes:
        return "no node to run on", []
    step = slurm_jobs.Spec(nodes=len(nodes), nodelist=tuple(nodes), partitions=(part.name,), minutes=2, immediate=30)
    out = _read(ctx, shlex.join(slurm_jobs.step_argv(step, ["hostname"])), "a job step of hostname")
    ran = {line.strip().split(".")[0] for line in out.splitlines() if line.strip()}
    missing = sorted(set(nodes) - ran)
    problems = [Finding(f"hostname on {len(nodes)} nodes ran on {', '.join(sorted(ran))}, not on "
                        f"{', '.join(missing)}")] if missing else []
    return f"hostname on {len(nodes)} nodes of {part.name}: {len(ran & set(nodes))}/{len(nodes)} nodes", problems


# In the job: the GPUs Slurm hands it, and which of the node's GPU device files it may open. Without a driver (the
# test cluster's char devices) an allowed open fails with ENXIO, a denied one with EPERM; with one, it succeeds.
_GPU_JOB = r"""echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
for f in /dev/nvidia[0-9]*; do
  if err=$( (exec 3<"$f") 2>&1 ); then echo "$f allowed"
  else case "$err" in *"not permitted"*) echo "$f denied";; *) echo "$f allowed";; esac; fi
done"""


def smoke_gpus(ctx: Context) -> tuple[str, list[Finding]]:
    """A 2-GPU job (1 where nodes have one) sees exactly its GPUs: CUDA_VISIBLE_DEVICES and the devices cgroup."""
    part = next(p for p in ctx.valid.partitions if p.spec.default)
    gpu_nodes = [n for n in ctx.valid.nodes if n.name in part.nodes and n.profile.gpu_count
                 and (ctx.limit is None or n.name in ctx.limit)]
    if not gpu_nodes:
        return "no GPU node in the default partition", []
    want = min(2, gpu_nodes[0].profile.gpu_count)
    step = slurm_jobs.Spec(nodes=1, nodelist=(gpu_nodes[0].name,), partitions=(part.name,), minutes=2,
                           gres=f"gpu:{want}", immediate=30)
    out = _read(ctx, shlex.join(slurm_jobs.step_argv(step, ["bash", "-c", _GPU_JOB])), f"a job step of {want} GPUs")
    visible = next((line.partition("=")[2] for line in out.splitlines() if line.startswith("CUDA_VISIBLE_DEVICES=")),
                   "")
    allowed = [line.split()[0] for line in out.splitlines() if line.endswith(" allowed")]
    problems = []
    if len([v for v in visible.split(",") if v]) != want:
        problems.append(Finding(f"a job given {want} GPUs has CUDA_VISIBLE_DEVICES={visible!r}"))
    if len(allowed) != want:
        problems.append(Finding(f"a job given {want} GPUs may open {len(allowed)} GPU device files "
                                f"({', '.join(allowed) or 'none'}): ConstrainDevices is not confining it"))
    return f"a job step of {want} GPUs on {gpu_nodes[0].name}: CUDA_VISIBLE_DEVICES={visible}, opens {len(allowed)}", \
        problems


def people(ctx: Context) -> tuple[str, list[Finding]]:
    """Each declared person and site group resolves on this host, to the inventory's ids."""
    spec = ctx.valid.identity
    assert spec is not None
    users = " ".join(shlex.quote(p.name) for p in spec.people)
    groups = " ".join(shlex.quote(g.name) for g in spec.groups)
    # getent exits 2 when a name does not resolve: that is a finding, not a failed check.
    passwd = _read(ctx, f"getent passwd {users} || true", "getent passwd") if users else ""
    group = _read(ctx, f"getent group {groups} || true", "getent group") if groups else ""
    return people_compare.people(spec, passwd, group)


def homes(ctx: Context) -> tuple[str, list[Finding]]:
    """The homes this host makes, and their .ssh, are the people's own directories (check/homes.py)."""
    spec = ctx.valid.identity
    base = home_directory(ctx.valid, ctx.machine.groups)
    assert spec is not None and base is not None
    stat = _read(ctx, homes_compare.read_command(spec, base), "stat of the homes")
    return homes_compare.homes(spec, base, stat)


def _makes_homes(m: Machine, v: ValidCluster) -> bool:
    return v.identity is not None and any(p.ssh_keys for p in v.identity.people) and \
        home_directory(v, m.groups) is not None


def directory(ctx: Context) -> tuple[str, list[Finding]]:
    """SSSD runs and the site directory answers for the accounting users and the admin and login groups, through
    SSSD and through nsswitch.conf alike (check/directory.py)."""
    spec = ctx.valid.identity
    assert spec is not None and spec.directory is not None
    users = controller.declared_users(ctx.valid)
    groups = [g for g in dict.fromkeys((spec.admin_group, spec.directory.login_group)) if g is not None]
    names, group_names = shlex.join(users), shlex.join(groups)
    active = _read(ctx, "systemctl is-active sssd.service || true", "systemctl is-active sssd")
    # getent exits 2 when a name does not resolve: that is a finding, not a failed check.
    sss = _read(ctx, f"getent -s sss passwd {names} || true", "getent -s sss passwd") if users else ""
    nss = _read(ctx, f"getent passwd {names} || true", "getent passwd") if users else ""
    group = _read(ctx, f"getent -s sss group {group_names} || true", "getent -s sss group") if groups else ""
    return directory_compare.directory(active, users, groups, sss, nss, group)


def adopt(ctx: Context) -> tuple[str, list[Finding]]:
    """sshd's PAM stack runs pam_slurm_adopt, with every file it includes before it read too."""
    sshd = _read(ctx, f"cat {access_files.SSHD_PAM}", access_files.SSHD_PAM)
    included = {words[0]: _read(ctx, f"cat /etc/pam.d/{shlex.quote(words[0])} 2>/dev/null || true",
                                f"/etc/pam.d/{words[0]}")
                for kind, words in people_compare.account_lines(sshd) if kind == "include" and words}
    return people_compare.adopt(sshd, included)


def service_access(ctx: Context) -> tuple[str, list[Finding]]:
    """A service host's sshd stack refuses everyone but root, the admin group, the deploy's login and
    service_host_groups (check/people.py's service_access)."""
    sshd = _read(ctx, f"cat {access_files.SSHD_PAM}", access_files.SSHD_PAM)
    listed = ctx.run(f"cat {access_files.SERVICE_ACCESS_CONF}")
    included = {words[0]: _read(ctx, f"cat /etc/pam.d/{shlex.quote(words[0])} 2>/dev/null || true",
                                f"/etc/pam.d/{words[0]}")
                for kind, words in people_compare.account_lines(sshd) if kind == "include" and words}
    # sshd's effective UsePAM (root's: sshd -T reads the host keys); nothing where it cannot be asked
    usepam = ctx.run("sshd -T 2>/dev/null | grep -i '^usepam '")
    return people_compare.service_access(sshd, listed.out if listed.rc == 0 else None, included,
                                         usepam.out if usepam.rc == 0 else "")


def records(ctx: Context) -> tuple[str, list[Finding]]:
    """The gate's records on the controller and accept's on this machine (admission/records.py)."""
    where = f"{ctx.machine.name}:{records_compare.GATE_RECORDS}"
    text = _read(ctx, records_compare.read_command(), f"cat {records_compare.GATE_RECORDS}/*.jsonl")
    try:
        here = node_records.read_all(node_records.directory(ctx.valid.name))
        fleet = records_compare.fleet(text, where, here)
    except (node_records.RecordError, OSError) as error:
        raise Failed(str(error)) from None
    return records_compare.compare(ctx.valid, fleet)


def repair(ctx: Context) -> tuple[str, list[Finding]]:
    """The repair loop's own account: the repairs under way and ended, quarantines, the breaker (check/repair.py)."""
    return repair_compare.check(ctx.valid, ctx.controller.answer(repair_compare.COMMAND), ctx.limit)


def deployed(ctx: Context) -> tuple[str, list[Finding]]:
    """Which clusterforge deployed this host, from which inventory, when and by whom: its stamp (check/deployed.py)."""
    text = _read(ctx, deployed_compare.read_command(), f"cat {STAMP}")
    try:
        stamp = deployed_compare.stamp_of(text)
    except NotAStamp as error:
        raise Failed(f"{STAMP} is not a stamp clusterforge wrote: {error}") from None
    if ctx.stamps is not None:
        ctx.stamps[ctx.machine.name] = stamp
    return deployed_compare.host(ctx.valid, stamp)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    applies: Callable[[Machine, ValidCluster], bool]
    read: Callable[[Context], tuple[str, list[Finding]]]
    smoke: bool = False


def _compute(m: Machine, v: ValidCluster) -> bool:
    return m.node is not None


def _controller(m: Machine, v: ValidCluster) -> bool:
    return "controller" in m.groups and m.name == v.controller.name


CHECKS: tuple[Check, ...] = (
    Check("daemons", lambda m, v: bool(expected_units(m, v)), daemons),
    Check("hardware", _compute, hardware),
    Check("gpus", lambda m, v: m.node is not None and m.node.profile.gpus is not None, gpus),
    Check("infiniband", _compute, infiniband),
    Check("health", lambda m, v: m.node is not None and v.health is not None, health),
    Check("stack", lambda m, v: v.stack is not None and m.runs_slurm, stack),
    Check("auth", lambda m, v: m.runs_slurm, auth),
    Check("nodes", _controller, slurm_nodes),
    Check("partitions", _controller, partitions),
    Check("topology", _controller, topology),
    Check("slurmdbd", _controller, slurmdbd),
    Check("records", lambda m, v: _controller(m, v) and bool(v.admission), records),
    Check("repair", lambda m, v: _controller(m, v) and v.repair is not None, repair),
    Check("users", lambda m, v: _controller(m, v) and bool(controller.declared_users(v)), users),
    Check("people", lambda m, v: v.identity is not None and bool(v.identity.people or v.identity.groups), people),
    Check("homes", _makes_homes, homes),
    Check("directory", lambda m, v: v.identity is not None and v.identity.directory is not None, directory),
    Check("adopt", lambda m, v: m.node is not None and access_files.adopts(v), adopt),
    Check("service-access", lambda m, v: access_files.guards_service_hosts(v) and access_files.service_host(m.groups),
          service_access),
    Check("deployed", lambda m, v: True, deployed),
    Check("smoke-hostname", _controller, smoke_hostname, smoke=True),
    Check("smoke-gpus", _controller, smoke_gpus, smoke=True),
)


def checks_for(machine: Machine, valid: ValidCluster, smoke: bool) -> list[Check]:
    return [c for c in CHECKS if c.applies(machine, valid) and (smoke or not c.smoke)]


def perform(check: Check, ctx: Context) -> Outcome:
    """One check on one host; a failed command or unreadable output is that check's finding. Unreachable
    (reach/ssh.py) propagates: the caller reports the host as not checked."""
    try:
        detail, findings = check.read(ctx)
    except ControllerUnreachable:
        raise
    except (Failed, ParseError) as error:
        return Outcome(ctx.machine.name, check.name, "", (Finding(str(error)),))
    except ControllerRefused as error:
        return Outcome(ctx.machine.name, check.name, "", (Finding(error.said),))
    return Outcome(ctx.machine.name, check.name, detail, tuple(findings))
