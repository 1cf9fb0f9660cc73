"""Slurm's vocabulary, written once: the node-state gate (drains.py: every drain, undrain, resume and reboot, each
read again just before it acts), the one reader of the nodes (nodes.py: sinfo's listing and `scontrol show node`
into one Node), the one job spec and the commands on jobs (jobs.py), what else slurmctld is asked (controller.py),
the holds (reservations.py), the bounded command runner and its Answer (commands.py), and the one ParseError with
the reader of ``Key=value`` records (parse.py). No module elsewhere composes a Slurm command
(tests/test_architecture.py): the callers choose only how they run them.

The standard library only: shipped inside every program that runs on a node or the controller (the health program,
the admission gate, the Slurm exporter; render/programs.py finds it from their imports), and imported as is by the
admin's commands, so each side reads and changes Slurm's state the same way.
"""
