"""Every golden case renders byte for byte what its expected/ folder holds.

After an intended change: CLUSTERFORGE_UPDATE_GOLDEN=1 pytest tests/render, then review the diff of expected/.
"""

from __future__ import annotations

import pytest
from golden_cases import UPDATE, Case, cases

from clusterforge.render import render_all

CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Case):
    files = render_all(case.valid())
    if UPDATE:
        case.expected.mkdir(exist_ok=True)
        for stale in case.expected.iterdir():
            stale.unlink()
        for name, text in files.items():
            (case.expected / name).write_text(text, encoding="utf-8")
    assert sorted(p.name for p in case.expected.iterdir()) == sorted(files)
    for name, text in files.items():
        assert (case.expected / name).read_text(encoding="utf-8") == text, f"{case.name}/{name} differs"


def test_there_is_a_case_per_supported_release():
    from clusterforge.versions import SUPPORTED

    assert {str(v) for v in SUPPORTED} <= {c.slurm_version for c in CASES}
