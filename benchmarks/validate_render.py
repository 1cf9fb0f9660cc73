"""Validate + render time for generated clusters of 1,000, 10,000 and 50,000 nodes; prints figures, asserts nothing.

    python benchmarks/validate_render.py [--sizes 1000,10000,50000] [--repeat 3]

Each size runs in a fresh process so its peak memory (max RSS) is its own. Two inventory styles: "ranges" (one
Nodes entry per 32-node leaf, as an admin writes it) and "one-by-one" (every node its own entry, the worst case).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

NODES_PER_LEAF = 32


def build(size: int, style: str):
    from clusterforge.model import Cluster, Fabric, Gpus, Host, Leaf, Nodes, Partition, Profile, Spine

    dgx = Profile("dgx-h100", sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000,
                  gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))
    leaves = (size + NODES_PER_LEAF - 1) // NODES_PER_LEAF
    nodes = []
    for leaf in range(leaves):
        first, last = leaf * NODES_PER_LEAF + 1, min(size, (leaf + 1) * NODES_PER_LEAF)
        if style == "ranges":
            address = f"10.{100 + leaf // 256}.{leaf % 256}.[1-{last - first + 1}]"
            nodes.append(Nodes(f"gpu[{first:05d}-{last:05d}]", address=address, profile="dgx-h100",
                               leaf=f"leaf{leaf + 1:04d}"))
        else:
            nodes.extend(Nodes(f"gpu{n:05d}", address=f"10.{100 + leaf // 256}.{leaf % 256}.{n - first + 1}",
                               profile="dgx-h100", leaf=f"leaf{leaf + 1:04d}") for n in range(first, last + 1))
    return Cluster(
        "bench", slurm_version="24.11",
        controller=Host("ctl", address="10.0.0.2"), database=Host("db", address="10.0.0.3", memory=262_144),
        profiles=(dgx,), nodes=tuple(nodes),
        fabric=Fabric(leaves=tuple(Leaf(f"leaf{i + 1:04d}") for i in range(leaves)),
                      spines=tuple(Spine(f"spine{s}", switches=f"leaf[0001-{leaves:04d}]") for s in (1, 2))),
        partitions=(Partition("train", profiles=("dgx-h100",), default=True, max_time="7-0"),
                    Partition("debug", nodes="gpu[00001-00008]", max_time="30"),
                    Partition("priority", profiles=("dgx-h100",), priority_tier=10, preempts=("train",))),
    )


def measure(size: int, style: str, repeat: int) -> dict[str, object]:
    from clusterforge.model import resolve
    from clusterforge.render import render_all

    best: dict[str, float] = {}
    for _ in range(repeat):
        start = time.perf_counter()
        cluster = build(size, style)
        built = time.perf_counter()
        valid = resolve(cluster)
        validated = time.perf_counter()
        files = render_all(valid)
        rendered = time.perf_counter()
        for key, value in (("build", built - start), ("validate", validated - built), ("render", rendered - validated)):
            best[key] = min(best.get(key, value), value)
    return {
        "size": size, "style": style, **best,
        "validate+render": best["validate"] + best["render"],
        "slurm_conf_lines": files["slurm.conf"].count("\n"),
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        size, style = args.one.split(":")
        print(json.dumps(measure(int(size), style, args.repeat)))
        return
    print(f"{'nodes':>7} {'inventory':>10} {'build s':>8} {'validate s':>10} {'render s':>9} {'val+render s':>12} "
          f"{'slurm.conf lines':>16} {'max RSS MiB':>11}")
    for style in ("ranges", "one-by-one"):
        for size in (int(s) for s in args.sizes.split(",")):
            out = subprocess.run([sys.executable, __file__, "--one", f"{size}:{style}", "--repeat", str(args.repeat)],
                                 capture_output=True, text=True, check=True).stdout
            r = json.loads(out)
            print(f"{r['size']:>7} {r['style']:>10} {r['build']:>8.3f} {r['validate']:>10.3f} {r['render']:>9.3f} "
                  f"{r['validate+render']:>12.3f} {r['slurm_conf_lines']:>16} {r['max_rss_mib']:>11.0f}")


if __name__ == "__main__":
    main()
