"""Code blocks on the pages an admin reads fit the width the site shows them at, with no horizontal scrollbar.

The width is taken from mkdocs-material's own stylesheet, at a 1280 px wide window (and 1920 px: the same, see
below), with the theme's default fonts:

- 1280 px is 80em, past the 76.25em breakpoint where both sidebars (navigation and contents) stand beside the page;
  below 100em the root font is 125 %, so 1rem = 20 px;
- the grid is at most 61rem (1220 px), less two sidebars of 12.1rem and the page's margins of 1.2rem each side:
  688 px of page;
- a code block's font is 0.85em of the page's 0.8rem (13.6 px) and it is padded 1.1764705882em each side (16 px):
  656 px of text;
- Roboto Mono, the theme's default code font (loaded from Google Fonts, so not in the package), advances 0.6em per
  character (1229 of 2048 units): 8.16 px, so 80 characters.

From 100em (1600 px) the root font grows to 137.5 %, and every length above is in rem or em, with the grid still
capped at 61rem: 1920 px shows the same 80 characters. A block indented into a list loses the list's indent
(1.875em of the page's font, 30 px): 76 characters.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WINDOW_PX = 1280
BROWSER_EM_PX = 16            # media queries count em in the browser's default font size, not the root's
ROBOTO_MONO_ADVANCE = 1229 / 2048
LIST_INDENT_EM = 0.625 + 1.25  # .md-typeset ul margin-left plus li margin-left, in the page's font


def stylesheet() -> str:
    material = pytest.importorskip("material")
    found = sorted((Path(material.__file__).parent / "templates" / "assets" / "stylesheets").glob("main.*.min.css"))
    assert found, "mkdocs-material's main stylesheet not found"
    return found[0].read_text()


def number(css: str, pattern: str) -> float:
    match = re.search(pattern, css)
    assert match, f"mkdocs-material's stylesheet no longer has {pattern!r}: measure the width again"
    return float(match.group(1))


def site_widths() -> tuple[int, int]:
    """How many monospace characters a code block shows at WINDOW_PX, at the top level and indented into a list."""
    css = stylesheet()
    both_sidebars_em = number(css, r"@media screen and \(min-width:([\d.]+)em\)\{\[dir=ltr\] \.md-sidebar--primary")
    assert WINDOW_PX / BROWSER_EM_PX >= both_sidebars_em, "at this width the sidebars would not stand beside the page"
    rem = 16 * number(css, r"html\{height:100%;overflow-x:hidden;font-size:([\d.]+)%\}") / 100
    grid = number(css, r"\.md-grid\{max-width:([\d.]+)rem") * rem
    sidebar = number(css, r"\.md-sidebar\{position:sticky;[^}]*width:([\d.]+)rem") * rem
    margin = number(css, r"\.md-content__inner\{margin-left:([\d.]+)rem\}") * rem
    page_font = number(css, r"\.md-typeset\{font-size:([\d.]+)rem;line-height") * rem
    code_font = number(css, r"\.md-typeset code\{[^}]*font-size:([\d.]+)em") * page_font
    padding = number(css, r"\.md-typeset pre>code\{[^}]*padding:[\d.]+em ([\d.]+)em") * code_font
    text = min(grid, WINDOW_PX) - 2 * sidebar - 2 * margin - 2 * padding
    advance = code_font * ROBOTO_MONO_ADVANCE
    return int(text / advance), int((text - LIST_INDENT_EM * page_font) / advance)


def user_pages() -> list[Path]:
    docs = ROOT / "docs"
    return [page for page in sorted(docs.rglob("*.md")) if "development" not in page.relative_to(docs).parts]


FENCE = re.compile(r"^( *)(```|~~~)")
# What an indented line may continue rather than be code: a list item, an admonition, a definition.
CONTAINER = re.compile(r"^\s*([-*+] |\d+\. |!!! |\?\?\? |: )")


def too_wide(text: str, top: int, indented: int) -> list[tuple[int, int]]:
    """(line number, width) of every code line wider than its block shows, measured from its fence's indent.

    Fenced blocks, and Markdown's indented ones: four spaces after a blank line that follows a plain paragraph."""
    wide, fence, in_indented, paragraph, blank = [], None, False, "", True
    for number_, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
            continue
        if fence is not None:
            if opened and opened.group(1) == fence and line.strip() in ("```", "~~~"):
                fence = None
            elif len(line.rstrip().removeprefix(fence)) > (indented if fence else top):
                wide.append((number_, len(line.rstrip().removeprefix(fence))))
            continue
        if not line.strip():
            blank = True
            continue
        if line.startswith("    ") and (in_indented or (blank and not CONTAINER.match(paragraph))):
            in_indented = True
            if len(line.rstrip()) - 4 > top:
                wide.append((number_, len(line.rstrip()) - 4))
        else:
            in_indented = False
            if not line.startswith(" "):
                paragraph = line
        blank = False
    return wide


def test_the_theme_shows_80_characters_of_code_at_1280_px():
    assert site_widths() == (80, 76)


def test_a_wide_line_is_found_and_a_fitting_one_is_not():
    page = "text\n```\n" + "x" * 80 + "\n" + "y" * 81 + "\n```\n  ```\n  " + "z" * 77 + "\n  ```\n"
    assert too_wide(page, 80, 76) == [(4, 81), (7, 77)]


def test_an_indented_code_block_is_measured_and_a_list_item_continued_is_not():
    code = "A paragraph:\n\n    " + "c" * 81 + "\n"
    listed = "- an item\n\n    " + "l" * 90 + "\n"
    admonition = '!!! note "A note"\n    ' + "n" * 90 + "\n"
    assert too_wide(code, 80, 76) == [(3, 81)]
    assert too_wide(listed, 80, 76) == [] and too_wide(admonition, 80, 76) == []


@pytest.mark.parametrize("page", user_pages(), ids=lambda page: str(page.relative_to(ROOT / "docs")))
def test_every_code_line_of_a_user_page_fits_the_site(page):
    top, indented = site_widths()
    wide = too_wide(page.read_text(), top, indented)
    assert not wide, (f"{page.relative_to(ROOT)}: code lines wider than the {top} characters the site shows "
                      f"({indented} in a list): " + ", ".join(f"line {n} ({w})" for n, w in wide))
