"""A deploy of the tests' own (tests/cli/test_pyinfra_events.py), in pyinfra's operations: on every host one that
changes something and one that finds nothing to do; on login01 one that fails as a failed install does, apt's words
on stdout and its error on stderr. With CLUSTERFORGE_TEST_SLEEP=SECONDS, a first one that sleeps that long."""

import os

from pyinfra import host
from pyinfra.operations import files, server

if seconds := os.environ.get("CLUSTERFORGE_TEST_SLEEP"):
    server.shell(name="sleeps", commands=[f"sleep {int(seconds)}"])
server.shell(name="touches a file", commands=["touch /tmp/clusterforge-test-touched"])
files.directory(name="finds /tmp", path="/tmp")
if host.name == "login01":
    # The command's own text (its marker) is an argument: no event may carry it, only its error output.
    server.shell(name="installs slurmd", commands=[
        "echo ARGUMENT-MARKER >/dev/null; echo 'Reading package lists...'; "
        "echo \"E: Version '1.2' for 'slurmd' was not found\" >&2; exit 100"])
