"""Rolling maintenance: the compute nodes through a change that needs them idle (a reboot), batch after batch, with
at most N of them out of service at once and every job let finish. batches.py plans from Slurm's view, run.py runs
it over SSH."""
