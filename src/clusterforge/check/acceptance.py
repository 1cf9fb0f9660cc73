"""The acceptance tests: the checks of `clusterforge check` as pytest-testinfra tests, for a site that runs its
checks with pytest (its CI's reports, JUnit XML): one test per check and host, over the same SSH settings and with
the same findings as the command.

This is a pytest test module that ships in the package, for an admin to run against a cluster; it is not one of
clusterforge's own tests. Its name does not start with test_, so no pytest run collects it by accident; naming it
with --pyargs runs it (pytest collects a module named on its command line whatever the file's name):

    CLUSTERFORGE_INVENTORY=inventories/prod.py pytest --pyargs clusterforge.check.acceptance
    CLUSTERFORGE_INVENTORY=inventories/prod.py CLUSTERFORGE_CHECK_SMOKE=1 pytest --pyargs \\
        clusterforge.check.acceptance -k 'gpu-node-001 or smoke'

CLUSTERFORGE_CHECK_MEMORY_TOLERANCE=PERCENT is --memory-tolerance (unset: the inventory's Acceptance). Each test
fails with the check's findings; a host that cannot be reached fails its tests with "could not check". Without
CLUSTERFORGE_INVENTORY its one test is skipped, saying so.
"""

from __future__ import annotations

import os

import pytest

from clusterforge.check.probes import Context, checks_for, perform
from clusterforge.check.run import munge_credential
from clusterforge.reach.hosts import load
from clusterforge.reach.ssh import Connections, Unreachable, answers

INVENTORY = os.environ.get("CLUSTERFORGE_INVENTORY")
SMOKE = os.environ.get("CLUSTERFORGE_CHECK_SMOKE") == "1"
# As `--memory-tolerance`: percent of a node's memory RealMemory may leave unused; unset, the inventory's.
_GIVEN = os.environ.get("CLUSTERFORGE_CHECK_MEMORY_TOLERANCE")
MEMORY_TOLERANCE = float(_GIVEN) / 100 if _GIVEN else None


def _cases():
    if not INVENTORY:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason="set CLUSTERFORGE_INVENTORY to an inventory"))]
    valid, targets = load(INVENTORY)
    return [pytest.param(target, check, id=f"{target.name}-{check.name}")
            for target in targets for check in checks_for(target.machine, valid, SMOKE)]


@pytest.fixture(scope="module")
def cluster():
    valid, targets = load(INVENTORY)
    with Connections(targets) as connections:
        yield valid, connections, munge_credential(valid, connections)


@pytest.mark.parametrize(("target", "check"), _cases())
def test_host(cluster, target, check):
    valid, connections, credential = cluster
    run = connections.runner(target.name)
    why = answers(run, target.reach)
    if why is not None:
        pytest.fail(f"{target.name}: could not check: {why}", pytrace=False)
    try:
        outcome = perform(check, Context(valid, target.machine, run, credential, MEMORY_TOLERANCE))
    except Unreachable as error:
        pytest.fail(f"{target.name}: could not check: connection lost: {error.cause}", pytrace=False)
    if outcome.findings:
        pytest.fail("\n".join(f"{target.name} {check.name}: {f.message}" for f in outcome.findings), pytrace=False)

