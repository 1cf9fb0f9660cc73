"""MkDocs hook: adds the reference pages, generated from the code at every build, so they cannot drift from it.

A field without a description, or a command without its exit statuses, makes the generation fail, and with it
`mkdocs build`.

The pages hold text written for a terminal (a command's help, an exit status's meaning): every page is written
through as_written, so that a `<cluster>` there is shown, not taken for an HTML tag and dropped.
"""

from __future__ import annotations

import re

from mkdocs.structure.files import File, Files

from clusterforge.reference import PAGES

# Code, left as it is: a fenced block (``` or ~~~ to the same fence), or a code span (`...`, ``...``).
_CODE = re.compile(r"^(?P<fence>```|~~~)[^\n]*\n.*?^(?P=fence)[ \t]*$|(?P<ticks>`+)[^\n]*?(?P=ticks)",
                   re.MULTILINE | re.DOTALL)


def as_written(markdown: str) -> str:
    """The page with every < and > outside code escaped, so Markdown shows them rather than reading HTML. An & is
    left as it is: the pages already escape their table cells (&lt;), and an entity stays an entity."""
    parts, end = [], 0
    for code in _CODE.finditer(markdown):
        parts += [_escaped(markdown[end:code.start()]), code.group()]
        end = code.end()
    return "".join([*parts, _escaped(markdown[end:])])


def _escaped(text: str) -> str:
    return text.replace("<", "&lt;").replace(">", "&gt;")


def page_text(path: str) -> str:
    """The generated page at ``path`` (under docs/), as the site gets it."""
    return as_written(PAGES[path]())


def on_files(files: Files, config) -> Files:
    for path in PAGES:
        files.append(File.generated(config, path, content=page_text(path)))
    return files
