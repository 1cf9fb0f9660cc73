"""The Slurm exporter: a program on the Slurm controller that Prometheus scrapes. Each scrape runs Slurm's own
commands (sinfo, squeue, sdiag, sacctmgr, scontrol show reservation), each bounded by a timeout, and turns their
text into metrics; nothing is kept between scrapes.

Shipped to the controller as one file (render/programs.py) and run there by Debian's python3 in isolated mode: its
modules import only the standard library, prometheus_client (Debian's python3-prometheus-client: 0.16 on Debian 12,
0.21 on Debian 13) and the slurm/ modules shipped in it: the commands and the node reader (``slurm/nodes.py``,
``slurm/jobs.py``, ``slurm/controller.py``), the one that says whose a drain is (``slurm/drains.py``, with the
``slurm/parse.py`` it reads with), the one that says which nodes the admission gate holds
(``slurm/reservations.py``) and the command runner the health program uses too (``slurm/commands.py``).
Which files those are is found from the imports (render/programs.py's exporter_files); in the file they are the
package ``PACKAGE`` in clusterforge's layout, so the relative imports resolve there as they do here. An
import-linter contract holds the modules to that, and tests import and run the shipped file alone.

- ``nodes.py``: which nodes can take jobs and whose a drain is, from slurm/nodes.py's listing, pure;
- ``jobs.py``, ``sdiag.py``: squeue's and sdiag's text to plain records, pure;
- ``commands.py``: the scrape's commands in parallel, each bounded (slurm/commands.py runs them);
- ``families.py``: records to metric families, pure;
- ``collector.py``: the scrape (prometheus_client's custom collector);
- ``main.py``: the command line (``--listen``, ``--timeout``, ``--once``).
"""

PACKAGE = "clusterforge_exporter"
