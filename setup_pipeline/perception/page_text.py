"""A competition page as markdown, whatever it was saved as: a page copied as HTML is rendered by
the Kaggle client's page cleaner (`agentk.kaggle.description.clean_page`), so the description
readers see one shape. Markdown with the odd inline tag is left alone: only a page built of HTML
blocks is converted."""

from __future__ import annotations

import re

_HTML = re.compile(r"<(h[1-6]|p|pre|div|ul|ol|table|br|html|body)\b", re.IGNORECASE)


def looks_like_html(text: str) -> bool:
    return len(_HTML.findall(text[:20000])) >= 3


def as_markdown(text: str) -> str:
    """The page as markdown: HTML is converted, markdown is returned unchanged."""
    if not looks_like_html(text):
        return text
    # Imported for HTML only: BeautifulSoup costs every run a third of a second to import.
    from agentk.kaggle.description import clean_page

    return clean_page(text) + "\n"
