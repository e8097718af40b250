"""What counts as a heading on a competition page (agentk/core/markdown.py)."""

from __future__ import annotations

from agentk.core.markdown import Heading, heading_lines, headings

PAGE = """# Title #
Intro with a #hashtag and ####NoSpace.

```python
# a comment, not a heading
```

<div>html before a heading</div>
## Evaluation
Submissions are scored
---
#
   ### Indented three
"""


def test_atx_headings_only_outside_code() -> None:
    assert headings(PAGE) == [
        Heading(0, 1, "Title"), Heading(8, 2, "Evaluation"), Heading(11, 1, ""), Heading(12, 3, "Indented three"),
    ]


def test_line_numbers_follow_splitlines() -> None:
    text = "intro\u2028more\r\n## Data\fx\n### Files"
    found = heading_lines(text)
    lines = text.splitlines()
    assert {i: lines[i] for i in found} == {2: "## Data", 4: "### Files"}
