"""The reference pages as the site's hook (docs/hooks/reference.py) writes them: text outside code is read as
written, so a help text's `<cluster>` is shown, not taken for an HTML tag and dropped."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import markdown

HOOK = Path(__file__).resolve().parents[2] / "docs" / "hooks" / "reference.py"


def hook():
    spec = importlib.util.spec_from_file_location("reference_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_commands_page_shows_the_placeholders_of_the_help_texts():
    page = hook().page_text("reference/commands.md")
    for placeholder in ("cluster", "node", "test"):
        assert f"&lt;{placeholder}&gt;" in page
        assert f"<{placeholder}>" not in page
    html = markdown.markdown(page, extensions=["tables", "pymdownx.superfences"])
    assert "$XDG_STATE_HOME/clusterforge/&lt;cluster&gt;/records" in html          # accept's help
    assert "cf-gate-new-&lt;node&gt;" in html                                     # admit's help
    assert "(cf:accept:&lt;test&gt; ...)" in html


def test_outside_code_angle_brackets_are_escaped_and_code_is_left_as_it_is():
    as_written = hook().as_written
    page = ("Text <cluster> and `code <kept>` and [`link`](#x), &lt;done&gt; once.\n\n"
            "```\nUsage: x <ARG>\n```\n\n| `--a <b>` | c <d> |\n")
    assert as_written(page) == (
        "Text &lt;cluster&gt; and `code <kept>` and [`link`](#x), &lt;done&gt; once.\n\n"
        "```\nUsage: x <ARG>\n```\n\n| `--a <b>` | c &lt;d&gt; |\n")


def test_every_generated_page_goes_through_the_escape():
    module = hook()
    for path, page in module.PAGES.items():
        assert module.page_text(path) == module.as_written(page())
