"""dcgm_quick: DCGM's level-1 diagnostic (`dcgmi diag -r 1 -j`, its software deployment checks: the driver, the
libraries, the permissions, in seconds) whatever the admission's ``dcgm_level``, judged as dcgm is. Not run unless
an inventory names it (``Admission(tests=(..., "dcgm_quick"))``): a first look before the long tests, or the only
DCGM run of a profile whose nodes cannot spare a level-2 run's minutes."""

from __future__ import annotations

from . import dcgm
from .base import AcceptanceTest

TEST = AcceptanceTest(name="dcgm_quick", program="dcgmi", unit="", expected_s=lambda setup: dcgm.EXPECTED_S[1],
                      arguments=lambda setup: dcgm.arguments(1), judge=dcgm.judge, exits=dcgm.EXITS, default=False)
