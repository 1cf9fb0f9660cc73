"""A test that needs something this machine lacks (a tool, a package, root, a cached Debian root): skipped, saying
what is missing and how to get it; failed instead under CLUSTERFORGE_REQUIRE_REALSLURM=1, which scripts/test.sh sets,
so that CI never passes a test it did not run (docs/development/tests.md)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE = "CLUSTERFORGE_REQUIRE_REALSLURM"


def skip_or_fail(message: str) -> NoReturn:
    """The test skipped for ``message``, or failed for it where every test must run."""
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{message} ({REQUIRE}=1)")
    pytest.skip(message)
