#!/usr/bin/env bash
# The main job on the built-in example until the Vagrant test cluster lands: validate the production inventory,
# summarise it and render every Slurm file into ./rendered for review.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh
.venv/bin/clusterforge validate inventories/prod.py
.venv/bin/clusterforge show inventories/prod.py
.venv/bin/clusterforge render inventories/prod.py --out rendered
