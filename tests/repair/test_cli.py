"""`clusterforge repair`: refused, named, where the inventory repairs nothing (the loop's answers themselves are
tests/repair/test_main.py's, and the e2e repair test asks the loop on the test cluster)."""

from __future__ import annotations

from click.testing import CliRunner
from golden_cases import PROD

from clusterforge.cli import cli


def test_an_inventory_that_repairs_nothing_is_refused_naming_why():
    result = CliRunner().invoke(cli, ["repair", str(PROD)])
    assert result.exit_code == 2
    assert "no profile has Repair(mode='observe' or 'on'): nothing is repaired" in result.output
