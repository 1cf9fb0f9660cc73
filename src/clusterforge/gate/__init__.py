"""The admission gate: a program on the Slurm controller that tests each node held by a ``cf-gate-*`` reservation
(slurm/reservations.py) with Slurm jobs inside its reservation, releases it when every test passes and drains it
with the failing test's number when one does not (docs/development/admission-design.md).

Slurm holds the state: which nodes are held (their reservations), what runs (the gate's jobs, found again by their
name ``cf-gate:<test>`` and their reservation), who drained a node (the reason). What the gate keeps itself, under
``STATE_DIR``, is what Slurm forgets: a job's judged result once slurmctld drops the ended job (MinJobAge), and the
records that outlive a hold. It converges after being killed at any point: each pass reads everything again.

Shipped to the controller as one file (render/programs.py), run by Debian's python3: the standard library only, the
health modules it builds its commands with and the admission modules it judges with, which render/programs.py finds
from the imports. An import-linter contract holds it to that.

- ``slurm.py``: the job and node commands and their text to plain records, pure;
- ``store.py``: the files under STATE_DIR, replaced whole;
- ``passes.py``: one pass over the held nodes, the nodes at once;
- ``main.py``: the command line and the loop.
"""

PACKAGE = "clusterforge_gate"
STATE_DIR = "/var/lib/clusterforge/gate"
PLAN = "/etc/clusterforge/admission.json"
