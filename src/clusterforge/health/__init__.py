"""The node health program and what it shares with the control side: the parsers of what a node's tools print,
the Xid reader, and the drain rules.

Shipped as is to every compute node, where it runs under the node's own python3 with nothing but the standard
library: nothing here imports anything outside this package but the standard library (an import-linter contract
says so, and a test runs the shipped files alone). `clusterforge check`, the deploy and the renderers import the same
modules, so the node and the control side read the same output the same way.
"""
