"""A competition page as markdown, whatever it was saved as: Kaggle pages copied as HTML keep
their headings, code blocks and lists, so the description readers see one shape."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, NavigableString, Tag

_HTML = re.compile(r"<(h[1-6]|p|pre|div|ul|ol|table|br|html|body)\b", re.IGNORECASE)
_BLOCKS = {"p", "div", "section", "article", "table", "tr", "ul", "ol", "body", "html"}


def looks_like_html(text: str) -> bool:
    return len(_HTML.findall(text[:20000])) >= 3


def _render(node: Tag | NavigableString, out: list[str]) -> None:
    if isinstance(node, NavigableString):
        out.append(str(node))
        return
    name = node.name.lower() if node.name else ""
    if name in ("script", "style"):
        return
    if re.fullmatch(r"h[1-6]", name):
        out.append(f"\n\n{'#' * int(name[1])} {node.get_text(' ', strip=True)}\n\n")
    elif name == "pre":
        out.append(f"\n\n```\n{node.get_text().strip(chr(10))}\n```\n\n")
    elif name == "code":
        out.append(f"`{node.get_text()}`")
    elif name == "li":
        out.append("\n- ")
        for child in node.children:
            _render(child, out)
    elif name == "br":
        out.append("\n")
    elif name in ("td", "th"):
        out.append(" " + node.get_text(" ", strip=True) + " |")
    else:
        if name in _BLOCKS:
            out.append("\n\n")
        for child in node.children:
            _render(child, out)
        if name in _BLOCKS:
            out.append("\n\n")


def as_markdown(text: str) -> str:
    """The page as markdown: HTML is converted, markdown is returned unchanged."""
    if not looks_like_html(text):
        return text
    out: list[str] = []
    _render(BeautifulSoup(text, "html.parser"), out)
    joined = "".join(out)
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+\n", "\n", joined)).strip() + "\n"
