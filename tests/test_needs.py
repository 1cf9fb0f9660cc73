"""tests/needs.py: a missing tool skips a test here, and fails it where CI asks every test to run."""

from __future__ import annotations

import pytest
from needs import REQUIRE, skip_or_fail


def test_a_missing_tool_skips_saying_what_is_missing(monkeypatch):
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="promtool not installed"):
        skip_or_fail("promtool not installed")


def test_under_clusterforge_require_realslurm_it_fails_naming_the_setting(monkeypatch):
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match=r"promtool not installed \(CLUSTERFORGE_REQUIRE_REALSLURM=1\)"):
        skip_or_fail("promtool not installed")
