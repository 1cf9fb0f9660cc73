"""What a node must show before it takes users' jobs, and how to read what it showed: shared by the admission gate
(on the controller, shipped alone with Debian's python3, so the standard library only) and `clusterforge accept`.

``tests`` writes each test's Slurm batch script and judges its output, ``verdict`` holds one judged result, and
``parse`` reads each tool's output: a parser refuses output it does not understand, so that a node is never passed
on output nobody read.
"""
