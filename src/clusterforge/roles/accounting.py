"""The accounting entries slurm.conf refers to: the cluster and its QOS, created before slurmctld starts (it refuses
a partition QOS it cannot find), and the QOS' TRES limits, set once slurmctld has registered the TRES."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from types import MappingProxyType

from ..accounts import Database, Step, accounts_plan, default_account, read_database
from ..accounts.controller import users_view
from ..errors import DeployError, for_pyinfra
from ..model import ValidCluster
from ..render.sacctmgr import qos_plan
from ..slurm import controller
from ..engine import ops, remote
from ..engine.change import Change, Command
from .daemons import ANSWERS, RECONFIGURE_TIMEOUT_S
from ..engine.facts import Accounting, accounting_state
from ..engine.run import Here, call, step
from ..engine.waits import Shown, bounded, shown

SACCTMGR_TIMEOUT_S = 120


@step("accounting entries", on=("database",))
def accounting_entries(here: Here) -> None:
    """On the database host, which has slurm.conf: sacctmgr finds slurmdbd through it."""
    valid = here.valid
    found = accounting_state(here)
    known = found.qos
    commands = [] if valid.name in found.clusters else [_sacctmgr("add", "cluster", valid.name)]
    commands += [_sacctmgr(*args) for args in qos_plan(valid).create if args[2] not in known]
    ops.commands(here, name=f"cluster {valid.name} and its QOS in the accounting database", commands=commands,
                 otherwise="the cluster and its QOS are registered")


@step("accounts, users and QOS", on=("controller",))
def accounts(here: Here) -> None:
    """On the controller, once slurmctld runs (TRES limits such as gres/gpu=... are accepted only once it has
    registered the TRES): the QOS, the account tree and the users converged to the inventory, from what the database
    held before the run. What the database has and the inventory lacks is left in place and reported, unless the
    inventory prunes it; slurmdbd refuses to delete an account or user with jobs, which is reported and passed."""
    valid = here.valid
    found = accounting_state(here)
    plan = accounts_plan(valid, _with_created_qos(valid, read_database(**found.listings)))
    if plan.left_in_place:
        here.warn_once("left in the accounting database, not in the inventory "
                       f"(Accounting(prune=True) removes them): {'; '.join(plan.left_in_place)}")
    commands: list[Command] = [_sacctmgr(*change.args) for change in plan.changes]
    deletions = [(deletion.what, _deletion(valid, deletion)) for deletion in plan.deletions]
    if deletions:
        commands.append(call(delete_entries, deletions=deletions))
        here.run.deletions_asked = True
    relearn = _users_learned_again(here, found)
    commands += relearn
    whats = (["slurmctld learns users again"] if relearn else []) + [s.what for s in plan.changes + plan.deletions]
    summary = "; ".join(whats[:3]) + (f" and {len(whats) - 3} more" if len(whats) > 3 else "")
    said = [c.text for c in commands if isinstance(c, Shown)] + [f"{what}, unless slurmdbd refuses (jobs there)"
                                                                 for what, _ in deletions]
    here.apply(Change("accounts, users and QOS" + (f": {summary}" if whats else ""), tuple(commands), tuple(said),
                      otherwise="the accounting database is as the inventory says"))


def _users_learned_again(here: Here, found: Accounting) -> list[Command]:
    """What slurmctld holds wrongly of the inventory's users, made right without a restart: a user it learned before
    the controller could resolve the name has no uid until slurmctld re-reads the user database (scontrol
    reconfigure; on Slurm 24.11 that is a new slurmctld, which re-reads everything), and after a restart in that state
    no default account either, which it takes again from slurmdbd when the default account is set (to the same
    value: slurmdbd sends the user record on). Users the controller cannot resolve at all are named; nothing slurmctld
    does helps them until they have a Unix account."""
    valid = here.valid
    view = users_view(valid, found.held, found.unix)
    if view.unknown:
        here.warn_once(view.unknown_text())
    if not view.stale:
        return []
    reason = view.stale_text(found.held)
    commands: list[Command] = []
    if any(found.held[name.lower()].uid is None for name in view.stale):
        commands += [shown(bounded(controller.RECONFIGURE, RECONFIGURE_TIMEOUT_S, controller.RECONFIGURE),
                           f"slurmctld learns users again ({controller.RECONFIGURE}): {reason}"), ANSWERS]
    defaults = {user.name: user.default for user in valid.accounting.users if user.name in view.stale and user.default}
    for name, default in defaults.items():
        commands.append(shown(_sacctmgr(*default_account(name, valid.name, default).args),
                              f"slurmctld learns {name}'s default account {default} again from slurmdbd"))
    return commands


def _sacctmgr(*args: str) -> str:
    """One change, bounded: sacctmgr waits on slurmdbd, which waits on MariaDB."""
    return bounded(shlex.join(["sacctmgr", "--immediate", *args]), SACCTMGR_TIMEOUT_S, f"sacctmgr {' '.join(args[:2])}")


def _deletion(valid: ValidCluster, deletion: Step) -> str:
    """One deletion, which slurmdbd may refuse (the account or user has jobs): the command then fails with
    slurmdbd's reason. An account is not deleted while an account under it is still there (its deletion was
    refused): Slurm 24.11 would delete it and leave the child without a parent, after which slurmdbd stops answering
    listings."""
    delete = shlex.join(["timeout", "-k", "5", str(SACCTMGR_TIMEOUT_S), "sacctmgr", "--immediate", *deletion.args])
    if deletion.args[:2] != ("delete", "account"):
        return delete
    name = next(a.split("=", 1)[1] for a in deletion.args if a.startswith("name="))
    children = shlex.join(["timeout", "-k", "5", str(SACCTMGR_TIMEOUT_S), "sacctmgr", "--noheader", "--parsable2",
                           "show", "associations", "where", f"cluster={valid.name}", "format=parentname,user"])
    return (f"if {children} | grep -qx {shlex.quote(name + '|')}; then echo 'an account under it stays' >&2; "
            f"exit 1; fi; {delete}")


def delete_entries(here: Here, deletions: list[tuple[str, str]]) -> None:
    """Each deletion in turn, whatever slurmdbd answers to the others. A refusal (jobs still there) is slurmdbd's
    answer, not a broken host: it is named now with slurmdbd's reason, the host's remaining steps run, and the run
    ends non-zero saying it again (refusals)."""
    refused = []
    for what, command in deletions:
        ok, output = remote.run(here.host, command)
        if not ok:
            reason = " ".join(" ".join(output.stderr_lines + output.stdout_lines).split()) or "no reason given"
            refused.append(f"{what} ({reason})")
    if refused:
        print(f"{here.name}: slurmdbd refused: {'; '.join(refused)}. Run the deploy again once their jobs have "
              "ended", file=sys.stderr)
        here.run.not_done.extend(refused)


@step("what slurmdbd refused", on=("controller",))
def refusals(here: Here) -> None:
    """On the controller, its last step but the stamp, where this run asks slurmdbd for deletions: the run fails here
    if slurmdbd refused one, so that it exits non-zero after every other step has run, and the host is not named as
    broken; its stamp stays the one it had, since its accounting is not yet as the inventory says."""
    if here.run.deletions_asked:
        here.apply(Change("what slurmdbd refused", (call(report_refusals),), (),
                          otherwise="slurmdbd refused nothing"))


def report_refusals(here: Here) -> None:
    run = here.run
    if run.not_done:
        run.refused_on.add(here.name)
        raise for_pyinfra(DeployError(f"{here.name}: slurmdbd refused: {'; '.join(run.not_done)}"))


def _with_created_qos(valid: ValidCluster, db: Database) -> Database:
    """The database as it is once the step before slurmctld has created the QOS it lacked (names only): the plan
    then sets the rest of each, rather than adding it again."""
    created = {args[2].lower(): MappingProxyType({"name": args[2]}) for args in qos_plan(valid).create
               if args[2].lower() not in db.qos}
    return replace(db, qos=MappingProxyType({**db.qos, **created})) if created else db
