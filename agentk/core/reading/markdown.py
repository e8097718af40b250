"""Where a markdown text's headings and code fences are, as CommonMark reads them (markdown-it-py),
so that every reader agrees on what they are: a heading is not a `#` line inside a code fence, a
`#hashtag` or a comment in an indented code block; a fence (``` or ~~~) ends at a closing fence as
long as its opening one, or, left open (a model's reply cut off at max_tokens), at the text's end.
Competition pages, model replies and the page readers all use these two."""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

# Only `#` headings count. Setext underlines would turn any line above a `---` rule into a heading,
# and an HTML block would swallow the headings after it up to the next blank line: pages copied
# from Kaggle are full of both.
_PARSER = MarkdownIt("commonmark").disable(["lheading", "html_block"])
_LANGUAGE = re.compile(r"[\w+.-]*")


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


@dataclass(frozen=True)
class Fence:
    start: int  # 0-based index in text.splitlines() of the opening fence
    end: int  # one past its last line: the closing fence, or the text's (container's) end when left open
    language: str  # the info string's leading tag, lowercased ("" for none): "python", "json", ...
    body: str  # the lines between the fences
    closed: bool


def fences(text: str) -> list[Fence]:
    """The text's fenced code blocks in order, nested ones (in lists, quotes) included."""
    lines = text.splitlines()
    found: list[Fence] = []
    for token in _PARSER.parse("\n".join(lines)):
        if token.type != "fence" or token.map is None:
            continue
        start, end = token.map
        last = lines[end - 1].strip().lstrip(">").strip() if end - 1 > start else ""
        closed = len(last) >= len(token.markup) and set(last) == {token.markup[0]}
        language = _LANGUAGE.match(token.info.strip()).group().lower()  # type: ignore[union-attr]
        found.append(Fence(start, end, language, token.content, closed))
    return found


def fenced_lines(text: str) -> set[int]:
    """Indexes in text.splitlines() of every line of a fenced block, its fences included."""
    return {line for fence in fences(text) for line in range(fence.start, fence.end)}

