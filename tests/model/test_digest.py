"""The inventory's digest (model/digest.py), which each deploy stamps on its hosts and `clusterforge check` compares:
the same in every process, blind to comments, layout, the order of keyword arguments and defaults written out, and
changed by a value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clusters import gpu_profile, small_cluster

from clusterforge.loader import load
from clusterforge.model import Setup, resolve

TESTS = Path(__file__).resolve().parents[1]

PLAIN = """\
from clusters import small_cluster
from clusterforge.inventory import host_groups
from clusterforge.model import Partition

cluster = small_cluster(partitions=(Partition("batch", profiles=("gpu",), default=True),
                                    Partition("short", nodes="gpu[01-02]", max_time="1:00:00")))
controller, compute, login, database, nfs = host_groups(cluster, ssh_user="root")
"""

# The same cluster, written otherwise: comments, other names and lines, keyword arguments in another order, a
# default written out, and other SSH settings (how hosts are reached is not what is deployed to them).
REWRITTEN = """\
# The test cluster, reformatted.
from clusters import small_cluster
from clusterforge.inventory import host_groups
from clusterforge.model import Partition


SHORT = Partition(
    "short",
    max_time="1:00:00",  # an hour
    nodes="gpu[01-02]",
)
BATCH = Partition("batch", default=True, profiles=("gpu",))

cluster = small_cluster(
    partitions=(BATCH, SHORT),
    auth="munge",
)
controller, compute, login, database, nfs = host_groups(cluster, ssh_user="admin", sudo=True)
"""

CHANGED = PLAIN.replace('max_time="1:00:00"', 'max_time="2:00:00"')


def digest_of(tmp_path: Path, text: str, name: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return load(path).valid.inventory_digest


def test_comments_layout_and_defaults_written_out_do_not_change_it_a_value_does(tmp_path):
    plain = digest_of(tmp_path, PLAIN, "plain")
    assert len(plain) == 64 and int(plain, 16) >= 0
    assert digest_of(tmp_path, REWRITTEN, "rewritten") == plain
    assert digest_of(tmp_path, CHANGED, "changed") != plain


def test_it_is_the_same_in_another_process_with_another_hash_seed():
    here = resolve(small_cluster()).inventory_digest
    code = "from clusters import small_cluster; from clusterforge.model import resolve; " \
           "print(resolve(small_cluster()).inventory_digest)"
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(TESTS)}
        there = subprocess.run([sys.executable, "-c", code], env=env, text=True, capture_output=True, check=True)
        assert there.stdout.strip() == here


def test_an_entry_at_its_defaults_is_the_entry_left_out_whatever_line_wrote_it():
    assert resolve(small_cluster(setup=Setup())).inventory_digest == resolve(small_cluster()).inventory_digest
    assert (resolve(small_cluster(profiles=(gpu_profile(real_memory=8000),))).inventory_digest
            != resolve(small_cluster()).inventory_digest)
