"""MkDocs hook: adds the reference pages, generated from the code at every build, so they cannot drift from it.

A field without a description, or a command without its exit statuses, makes the generation fail, and with it
`mkdocs build`.
"""

from __future__ import annotations

from mkdocs.structure.files import File, Files

from clusterforge.reference import PAGES


def on_files(files: Files, config) -> Files:
    for path, page in PAGES.items():
        files.append(File.generated(config, path, content=page()))
    return files
