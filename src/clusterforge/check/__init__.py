"""`clusterforge check`: post-deploy acceptance of a running cluster against its inventory, read-only.

probes.py holds the checks (read-only commands through a ``run`` callable), parse.py and slurm_parse.py turn the
commands' text into records, compare.py compares them with the inventory; run.py runs them over SSH (testinfra)
on every host in parallel (and, for --fabric, fabric.py: `ibnetdiscover` on one host, compared by
fabric_import/), and acceptance.py runs the same checks as pytest-testinfra tests (a test module
for admins, run with `pytest --pyargs clusterforge.check.acceptance`).
"""

from .findings import Finding, Outcome, exit_status

__all__ = ["Finding", "Outcome", "exit_status"]
