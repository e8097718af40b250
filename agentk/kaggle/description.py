"""Turn Kaggle's competition pages into the agent's description.md: text kept, noise dropped.

Pages arrive as HTML or markdown. Images, link targets, scripts and emoji are noise to a model
reading the task; headings, paragraphs, lists, tables and code blocks carry the task, so they stay.
"""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag

from agentk.core.reading.markdown import fenced_lines, headings

# The pages an agent needs, in reading order, with the heading each gets. Others (rules, prizes,
# timeline, citation) are about the contest, not the task.
SECTIONS = {
    "description": "Overview", "overview": "Overview", "abstract": "Overview",
    "evaluation": "Evaluation", "data-description": "Data", "data": "Data",
}
_SKIP = ("rules", "prize", "timeline", "citation", "host", "faq")
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\U00002600-\U000027bf\U0001f1e6-\U0001f1ff\u200d\ufe0f\u2b50\u2b55\u2705\u274c]+"
)
_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_HTML_TAG = re.compile(r"<(p|div|h[1-6]|ul|ol|li|a|img|br|table|span|strong|em|code|pre)\b", re.IGNORECASE)


def description_markdown(title: str, pages: dict[str, str]) -> str:
    """description.md text: `# title`, then Overview, Evaluation and Data sections as found."""
    parts = [f"# {title}"]
    used: set[str] = set()
    for name in _ordered(pages):
        heading = SECTIONS.get(name.lower(), name.replace("-", " ").title())
        if heading in used:
            continue
        text = _drop_repeated_heading(clean_page(pages[name]), heading)
        if text:
            used.add(heading)
            parts.append(f"## {heading}\n{text}")
    return "\n\n".join(parts).strip() + "\n"


def save_raw_pages(pages: dict[str, str], raw_dir: Path) -> None:
    raw_dir.mkdir(parents=True, exist_ok=True)
    for name, content in pages.items():
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "page"
        (raw_dir / f"{safe}.html").write_text(content)


def clean_page(content: str) -> str:
    text = _html_to_markdown(content) if _HTML_TAG.search(content) else content
    text = _MD_IMAGE.sub("", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _EMOJI.sub("", text)
    code = fenced_lines(text)
    lines = []
    for number, line in enumerate(text.splitlines()):
        # Removed images and emoji leave double spaces; code keeps its own spacing.
        lines.append(line.rstrip() if number in code else re.sub(r"(?<=\S) {2,}", " ", line).rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _drop_repeated_heading(text: str, heading: str) -> str:
    # Hosts often open a page with its own "## Overview"; under our "## Overview" it is just noise.
    first, _, rest = text.partition("\n")
    found = headings(first)
    if found and found[0].title.lower() == heading.lower():
        return rest.strip()
    return text


def _ordered(pages: dict[str, str]) -> list[str]:
    known = [n for key in SECTIONS for n in pages if n.lower() == key]
    others = [n for n in pages if n not in known and not any(s in n.lower() for s in _SKIP)]
    return known + others


def _html_to_markdown(html: str) -> str:
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "img", "svg", "iframe", "video", "noscript"]):
        tag.decompose()
    return _render(soup).strip()


def _render(node: Tag) -> str:
    out: list[str] = []
    for child in node.children:
        if isinstance(child, NavigableString):
            out.append(re.sub(r"\s+", " ", str(child)))
            continue
        if not isinstance(child, Tag):
            continue
        name = child.name or ""
        inner = _render(child).strip()
        if re.fullmatch(r"h[1-6]", name):
            out.append(f"\n\n{'#' * min(int(name[1]) + 2, 6)} {inner}\n\n")
        elif name == "pre":
            out.append(f"\n\n```\n{child.get_text().strip()}\n```\n\n")
        elif name == "code":
            out.append(f"`{child.get_text()}`")
        elif name == "li":
            out.append(f"\n- {inner}")
        elif name in ("p", "div", "ul", "ol", "table", "section", "blockquote"):
            out.append(f"\n\n{inner}\n\n")
        elif name == "tr":
            cells = [c.get_text(" ", strip=True) for c in child.find_all(["td", "th"])]
            out.append("\n| " + " | ".join(cells) + " |")
        elif name == "br":
            out.append("\n")
        else:  # a, span, strong, em ...: keep the text, drop the markup (and link targets)
            out.append(inner)
    return "".join(out)
