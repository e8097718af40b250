"""What counts as a heading or a code fence in markdown (agentk/core/reading/markdown.py)."""

from __future__ import annotations

from agentk.core.reading.markdown import Heading, fenced_lines, fences, heading_lines, headings

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


def test_fences_as_commonmark_reads_them() -> None:
    text = ("Plan:\n```python title\nx = 1\n```\n1. then\n   ~~~json\n   {\"a\": 1}\n   ~~~\n"
            "````\n```\nnot a close\n````\n```py\ncut off")
    found = fences(text)
    assert [(f.start, f.end, f.language, f.closed) for f in found] == [
        (1, 4, "python", True), (5, 8, "json", True), (8, 12, "", True), (12, 14, "py", False)]
    assert found[0].body == "x = 1\n" and found[1].body == '{"a": 1}\n'
    assert found[2].body == "```\nnot a close\n" and found[3].body == "cut off"
    assert fenced_lines("a\n```\nb\n```\nc") == {1, 2, 3}
