#!/usr/bin/env bash
# Creates .venv with clusterforge and its test tools; quiet and idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -e '.[test,docs]'
