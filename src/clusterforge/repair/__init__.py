"""Automatic repair: a program on the Slurm controller, beside the admission gate, that returns a node the health
check drained for a hardware fault to service with no one's command: a GPU reset (asked of the node's health
check), a reboot through Slurm, a power cycle through the node's BMC; then the admission gate's repaired hold tests
it. Within a budget of attempts per node and fault class, a fleet budget of nodes in repair at once, and a circuit
breaker that stops every new action where too many nodes fault at once (docs/operations/repair.md).

Slurm holds the node's state; what the loop keeps itself, under STATE_DIR, is what Slurm forgets: each node's
repair under way and its attempts, the breaker. It converges after being killed at any point: each pass reads
Slurm again, and every action re-reads the node just before it acts (slurm/drains.py).

- ``plan.py``: repair.json, the inventory's policies;
- ``faults.py``: a health drain's fault class;
- ``store.py``: the files under STATE_DIR;
- ``passes.py``: one pass over the nodes;
- ``status.py``: what ``--status`` says, as text and as the JSON `clusterforge check` reads;
- ``main.py``: the command line and the loop.
"""

PACKAGE = "clusterforge_repair"
STATE_DIR = "/var/lib/clusterforge/repair"
