"""The node health program: the parsers of what a node's tools print, the Xid reader, the probes, and the program
Slurm runs as HealthCheckProgram, Prolog, Epilog and RebootProgram.

Shipped to every compute node with the slurm/ modules it imports (the node-state gate, the holds, the runner), where
it runs under the node's own python3 with nothing but the standard library (an import-linter contract says so, and a
test runs the shipped file alone). `clusterforge check` imports the same parsers, so the node and the control side
read the same output the same way.
"""
