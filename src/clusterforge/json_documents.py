"""The one way a command prints its --json document: a JSON object whose "schema" is the version of that command's
shape. A script checks it and refuses a shape it was not written for, instead of misreading a changed one.

A version goes up when a field is removed or renamed, or changes its type or meaning. A new field leaves it as it
is: a script written for version N reads every document of version N, and ignores the fields it does not know."""

from __future__ import annotations

import json
from collections.abc import Mapping

# Each command with --json, by its name under `clusterforge`, and the version of its document's shape
# (tests/cli/test_json_schema.py holds this list to the commands that have the option).
VERSIONS = {"accept": 1, "check": 1, "hosts": 1, "plan": 1, "roll": 1, "secrets check": 1, "show": 1, "validate": 1}


def document(command: str, body: Mapping[str, object]) -> str:
    """``body`` as the JSON object ``clusterforge COMMAND --json`` prints, its schema version first."""
    if "schema" in body:
        raise ValueError(f"{command}: 'schema' is the document's version, not a field of its own")
    return json.dumps({"schema": VERSIONS[command], **body}, indent=1)
