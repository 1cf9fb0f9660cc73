"""The Slurm exporter: a program on the Slurm controller that Prometheus scrapes. Each scrape runs Slurm's own
commands (sinfo, squeue, sdiag, sacctmgr), each bounded by a timeout, and turns their text into metrics; nothing is
kept between scrapes.

Shipped as is to the controller and run there by Debian's python3 in isolated mode: its modules import only the
standard library, prometheus_client (Debian's python3-prometheus-client: 0.16 on Debian 12, 0.21 on Debian 13) and
the two health modules that say whose a drain is (``health/drains.py`` and the ``health/parse.py`` it reads with)
and the command runner the health program uses too (``health/commands.py``), which are shipped beside it. ``PROGRAM_FILES`` names them all, as paths under the clusterforge package; shipped into
a directory named ``PACKAGE`` in that layout, the relative imports resolve there as they do here. An import-linter
contract holds the modules to that, and a test runs the shipped files alone.

- ``nodes.py``, ``jobs.py``, ``sdiag.py``: the commands and their text to plain records, pure;
- ``commands.py``: the scrape's commands in parallel, each bounded (health/commands.py runs them);
- ``families.py``: records to metric families, pure;
- ``collector.py``: the scrape (prometheus_client's custom collector);
- ``main.py``: the command line (``--listen``, ``--timeout``, ``--once``).
"""

PACKAGE = "clusterforge_exporter"

PROGRAM_FILES = (
    "__init__.py",
    "exporter/__init__.py",
    "exporter/collector.py",
    "exporter/commands.py",
    "exporter/families.py",
    "exporter/jobs.py",
    "exporter/main.py",
    "exporter/nodes.py",
    "exporter/sdiag.py",
    "health/__init__.py",
    "health/commands.py",
    "health/drains.py",
    "health/parse.py",
)
