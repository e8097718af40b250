"""Where a markdown page's headings are, as CommonMark reads them (markdown-it-py), so that every
reader of competition pages agrees on what a heading is: not a `#` line inside a code fence, not
a `#hashtag`, not a comment in an indented code block."""

from __future__ import annotations

from dataclasses import dataclass

from markdown_it import MarkdownIt

# Only `#` headings count. Setext underlines would turn any line above a `---` rule into a heading,
# and an HTML block would swallow the headings after it up to the next blank line: pages copied
# from Kaggle are full of both.
_PARSER = MarkdownIt("commonmark").disable(["lheading", "html_block"])


@dataclass(frozen=True)
class Heading:
    line: int  # 0-based index in text.splitlines()
    level: int  # 1..6
    title: str  # without the #s and the surrounding spaces


def headings(text: str) -> list[Heading]:
    """The page's `#` headings in order (a bare `#` too, with an empty title), nested ones (in lists,
    quotes) included."""
    # Rejoined so that markdown-it's line numbers are those of text.splitlines(), which also breaks
    # lines at characters markdown-it does not (\f, \u2028, ...).
    tokens = _PARSER.parse("\n".join(text.splitlines()))
    found: list[Heading] = []
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type == "heading_open" and opening.map is not None:
            found.append(Heading(opening.map[0], int(opening.tag[1]), inline.content.strip()))
    return found


def heading_lines(text: str) -> dict[int, Heading]:
    """`headings(text)` by line index, for readers that walk the page line by line."""
    return {heading.line: heading for heading in headings(text)}
