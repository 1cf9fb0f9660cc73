#!/usr/bin/env bash
# The tests that need neither root, nor the test cluster, nor Slurm's daemons, nor any Debian package, nor PyPI:
# every tier but the real-Slurm, the simulated-host deploy, the installed wheel and the e2e ones
# (docs/development/tests.md has the tiers), and the docs site built strictly. Makes the virtualenv first if there is
# none (bash scripts/setup-venv.sh: no root). About two minutes on the 2-core development machine. Extra arguments go
# to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/pytest ] || bash scripts/setup-venv.sh
# Not --quiet: with it MkDocs counts no warning and --strict passes a broken link (mkdocs/mkdocs#4126).
site=$(mktemp -d); trap 'rm -rf "$site"' EXIT
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$site"
.venv/bin/pytest -m "not realslurm and not e2e and not install" --ignore=tests/deploy "$@"
