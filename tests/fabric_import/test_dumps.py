"""The captured dumps are what the real ibnetdiscover prints for their net files (run under ibsim)."""

from __future__ import annotations

import os

import pytest
from fabric_import import ibsim
from fabric_import.cases import CAPTURED


@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_captured_dump_is_what_ibnetdiscover_prints(name):
    case = CAPTURED[name]
    printed = ibsim.discover(case.net().text(), case.attach)
    if os.environ.get("CLUSTERFORGE_UPDATE_GOLDEN") == "1":
        case.path.parent.mkdir(exist_ok=True)
        case.path.write_text(printed)
    assert printed == case.text()
