"""`clusterforge accept`, and `admit`: the acceptance of many nodes at once, run from the admin's machine through the
controller, beside `roll`. The tests themselves, their scripts, parsers and verdicts, are the admission gate's
(admission/): accept submits the same scripts and judges their output the same way.

- ``run.py``: the rounds (each node's single-node tests, then the multi-node all_reduce, bisected where slow, and
  the rail round), the report's records, and the drains of the nodes found, through the node-state gate;
- ``bisect.py``: which node of a slow set is slow, in the fewest rounds, pure;
- ``jobs.py``: a round's Slurm jobs, their scripts and names;
- ``report.py``: what accept prints, and its JSON;
- ``admit.py``: an admin's admission by hand of nodes the gate holds.
"""
