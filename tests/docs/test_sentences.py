"""The pages an admin reads are written in short sentences: on each user page (every docs/**/*.md but the
development pages) sentences average at most 18 words, and none runs past 45. A long sentence holds several ideas,
and a reader in the middle of an incident takes them one at a time (issue 49).

What counts as prose, and how it is cut into sentences, is kept simple on purpose:

- fenced code blocks, tables (lines that start with `|`), headings, HTML comments and admonition markers
  (`!!! note "..."`) are left out: they are not sentences;
- a paragraph, a list item and each part of a definition list (the term, and each `:   ` definition) is a text of
  its own: a sentence never runs from one into the next;
- an inline code span counts as one word, a link as its text, an image as nothing;
- a text is cut at the whitespace after `.`, `!` or `?`, and after a closing parenthesis or quote that follows
  one: "(It waits.) Then" is two sentences. Many sentences here start with a program's name in lower case
  ("slurmctld refuses it"), so what follows may be any word. An ellipsis and the abbreviations e.g., i.e., etc.,
  cf. and vs. end nothing;
- a text is also cut after `:` or `;`, but only where a capital letter, a code span or an opening parenthesis
  follows: "first: Slurm" is two sentences, "see `plan`: it lists" one;
- a word is a run of characters between spaces with at least one letter or digit in it ("—" is not a word).

A failure quotes the sentence as measured, each code span shown as the word `Code`. An indented code block (four
spaces after a blank line, no fence) is read as prose: the pages fence their code, and the few indented lines left are
one short command each.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MAX_AVERAGE = 18
MAX_SENTENCE = 45
# the development pages are for those who work on clusterforge; the reference pages are written by the site's hook
# from the code (docs/hooks/reference.py) and are not on disk, but would be left out here too
NOT_USER_PAGES = ("development", "reference", "hooks")
USER_PAGES = sorted(page for page in DOCS.rglob("*.md")
                    if page.relative_to(DOCS).parts[0] not in NOT_USER_PAGES)

FENCE = re.compile(r"^\s*(```|~~~)")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
DEFINITION = re.compile(r"^\s*:\s{1,4}")
CODE_WORD = "Code"          # stands for an inline code span: one word, and a sentence may start with it
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
LINK = re.compile(r"\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")
AUTOLINK = re.compile(r"<(?:https?://|mailto:)[^>]+>")
TAG = re.compile(r"</?[A-Za-z][^>]*>")
NOT_AN_END = ("...", "e.g.", "i.e.", "etc.", "cf.", "vs.")
CLAUSE_START = re.compile(r"[A-Z(]|" + CODE_WORD + r"\b")


def texts(markdown: str) -> list[str]:
    """The page's prose as separate texts (paragraphs, list items, definition terms and definitions), each on one
    line, with code spans, links and markup already replaced."""
    markdown = re.sub(r"<!--.*?-->", "", markdown, flags=re.DOTALL)
    found: list[list[str]] = []
    current: list[str] = []
    in_fence = False

    def close() -> None:
        nonlocal current
        if current:
            found.append(current)
        current = []

    for line in markdown.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            close()
            continue
        stripped = line.strip()
        if in_fence or not stripped or stripped.startswith(("|", "#", "!!!", "???")):
            close()
            continue
        if LIST_ITEM.match(line) or DEFINITION.match(line):
            close()
            line = DEFINITION.sub("", LIST_ITEM.sub("", line, count=1), count=1)
        current.append(line.strip())
    close()
    return [prose(" ".join(lines)) for lines in found]


def prose(text: str) -> str:
    text = CODE_SPAN.sub(CODE_WORD, text)
    text = IMAGE.sub("", text)
    text = LINK.sub(r"\1", text)
    text = AUTOLINK.sub("link", text)
    text = TAG.sub("", text)
    return text.replace("**", "").replace("\\", "")


def ends_a_sentence(before: str, after: str) -> bool:
    """Whether the whitespace between `before` and `after` ends a sentence (the rule of the module's docstring)."""
    if before[-1] in ":;":
        return bool(CLAUSE_START.match(after))
    mark = before[:-1] if before[-1] in ")\"" else before
    return mark[-1:] in (".", "!", "?") and not mark.endswith(NOT_AN_END)


def split(text: str) -> list[str]:
    found, start = [], 0
    for space in re.finditer(r"\s+", text):
        if space.start() > 0 and ends_a_sentence(text[:space.start()], text[space.end():]):
            found.append(text[start:space.start()])
            start = space.end()
    return [*found, text[start:]]


def sentences(markdown: str) -> list[str]:
    return [sentence for text in texts(markdown) for sentence in split(text) if words(sentence)]


def words(sentence: str) -> int:
    return sum(1 for word in sentence.split() if re.search(r"\w", word))


def test_code_tables_headings_and_comments_are_not_prose():
    page = ("# A heading of many words here\n\nOne two three.\n\n```bash\nnot. Prose here\n```\n\n"
            "| a | b. C d |\n|---|---|\n\n<!-- a comment. Not counted -->\n!!! note \"A title\"\n    Inside it.\n")
    assert sentences(page) == ["One two three.", "Inside it."]


def test_list_items_and_definitions_are_texts_of_their_own():
    page = "Intro line\n- first item\n  goes on\n- second item\n\n`term`\n:   Its meaning\n"
    assert sentences(page) == ["Intro line", "first item goes on", "second item", "Code", "Its meaning"]


def test_code_is_one_word_and_a_link_its_text():
    [sentence] = sentences("Run `clusterforge plan site.py` as [the plan page](operations/plan.md#x) says.")
    assert sentence == "Run Code as the plan page says."
    assert words(sentence) == 7


def test_a_colon_ends_a_sentence_only_before_a_capital_a_code_span_or_a_parenthesis():
    """"see `plan`: it lists" is one thought; "first: Slurm" starts a second."""
    assert sentences("It stops. `check` then runs: Slurm waits; (or not) see `plan`: it lists 3.11 hosts.") == [
        "It stops.", "Code then runs:", "Slurm waits;", "(or not) see Code: it lists 3.11 hosts."]
    assert sentences('(It waits.) Then "it ends." Done (e.g. x) so.') == ["(It waits.)", 'Then "it ends."',
                                                                        "Done (e.g. x) so."]


def test_a_sentence_may_start_with_a_program_in_lower_case_but_not_after_an_ellipsis():
    """slurmctld, sshd and clusterforge begin sentences in lower case; a list that trails off does not end one."""
    assert sentences("It stops. slurmctld waits (`a`, ...) and then ends; it goes on. etc. and more") == [
        "It stops.", "slurmctld waits (Code, ...) and then ends; it goes on.", "etc. and more"]


@pytest.mark.parametrize("page", USER_PAGES, ids=[str(page.relative_to(DOCS)) for page in USER_PAGES])
def test_sentences_on_a_user_page_are_short(page):
    """One idea a sentence: the average holds the page's style, the longest bound catches the one that slipped."""
    found = sentences(page.read_text())
    assert found, f"{page.relative_to(ROOT)} has no prose"
    long = [sentence for sentence in found if words(sentence) > MAX_SENTENCE]
    assert not long, (f"{page.relative_to(ROOT)}: {len(long)} sentence(s) over {MAX_SENTENCE} words, the first "
                      f"of {words(long[0])}: {long[0][:100]!r}...")
    average = sum(words(sentence) for sentence in found) / len(found)
    assert average <= MAX_AVERAGE, (f"{page.relative_to(ROOT)}: sentences average {average:.1f} words "
                                    f"(at most {MAX_AVERAGE})")


def test_every_user_page_is_measured():
    """A page moved to another folder still counts, and the development pages, written for contributors, do not."""
    names = {str(page.relative_to(DOCS)) for page in USER_PAGES}
    assert {"identity.md", "own-machines.md", "operations/ssh.md", "inventory/stack.md"} <= names
    assert not any(name.startswith("development/") for name in names)
