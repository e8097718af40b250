"""Reading a Kaggle competition page (markdown) without an LLM.

Kaggle pages come in two shapes: hand-summarised ones (`# Title`, `## Overview`,
`## Evaluation`, `## Data`) and verbatim copies (`# Overview` holding `## Description`,
`## Evaluation`, `## Prizes`, ... then `# Dataset Description`). Everything here works
on heading keywords rather than fixed positions so both shapes (and others) read alike.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

from agentk.core.reading.markdown import fenced_lines, fences, heading_lines

_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_BARE_URL = re.compile(r"<?https?://\S+>?")
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(\s[^<>]*)?/?>")
_ELISION = {"...", "…", "etc", "etc."}
_NUMBER = re.compile(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")

# Heading keywords; a section inherits its parent's category unless its own heading decides.
_NOISE = ("prize", "timeline", "citation", "acknowledg", "frequently asked", "faq", "rules",
          "eligib", "how do i", "getting started", "kernel", "team", "leaderboard", "winner",
          "contact", "license", "notebooks", "deadline", "submission limit")
_CATEGORIES = (
    ("noise", _NOISE),
    ("submission", ("submission", "submitting")),
    ("evaluation", ("evaluat", "metric", "scoring")),
    ("data", ("data", "file", "field", "column", "dictionary", "variable", "feature")),
    ("overview", ("overview", "description", "introduction", "background", "task", "goal")),
)


@dataclass
class _Section:
    level: int  # 0 for text before the first heading
    heading: str
    body: str  # own text only, up to the next heading of any level
    category: str


def _split(text: str) -> list[_Section]:
    """Flat list of sections in page order; headings inside code fences are not headings."""
    out: list[_Section] = [_Section(0, "", "", "overview")]
    stack: list[tuple[int, str]] = []  # (level, category) of open ancestors
    lines: list[str] = []
    found = {number: h for number, h in heading_lines(text).items() if h.title}
    for number, line in enumerate(text.splitlines()):
        if number in found:
            out[-1].body = "\n".join(lines).strip("\n")
            lines = []
            level, heading = found[number].level, found[number].title
            while stack and stack[-1][0] >= level:
                stack.pop()
            inherited = stack[-1][1] if stack else "overview"
            # The page's title is no section: a word of it ("Dogs vs. Cats Redux: Kernels Edition")
            # must not make the whole page noise under it.
            title = len(out) == 1 and not stack and level == min(h.level for h in found.values())
            category = _category(heading, inherited, title=title)
            stack.append((level, category))
            out.append(_Section(level, heading, "", category))
        else:
            lines.append(line)
    out[-1].body = "\n".join(lines).strip("\n")
    return out


def _category(heading: str, inherited: str, title: bool = False) -> str:
    if inherited == "noise":
        return "noise"
    low = heading.lower()
    for name, words in _CATEGORIES:
        if title and name == "noise":
            continue
        if any(w in low for w in words):
            # "Dataset Description" is data, not overview: the data keywords are checked first.
            return name
    return inherited


def sections(text: str) -> dict[str, str]:
    """Map each heading (lower-cased) to its body, nested sub-sections included.

    Repeated headings are joined so no text is lost.
    """
    flat = _split(text)
    result: dict[str, str] = {}
    for i, sec in enumerate(flat):
        if sec.level == 0:
            continue
        parts = [sec.body]
        for child in flat[i + 1:]:
            if child.level <= sec.level:
                break
            parts.append("#" * child.level + " " + child.heading + "\n" + child.body)
        body = "\n\n".join(p for p in parts if p.strip()).strip()
        key = sec.heading.lower()
        result[key] = f"{result[key]}\n\n{body}" if key in result else body
    return result


def _clean(text: str) -> str:
    """Strip presentation noise but keep meaning: link text stays, LaTeX stays."""
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _BARE_URL.sub("", text)
    code = fenced_lines(text)
    out = [line if number in code else _HTML_TAG.sub("", line).rstrip() for number, line in enumerate(text.splitlines())]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _paragraphs(text: str) -> list[str]:
    # Sentences about prizes are promotion, not task; they are dropped wherever they sit.
    out = []
    for para in re.split(r"\n\s*\n", _clean(text)):
        if _opens_with_fence(para) or not re.search(r"\bprizes?\b", para, re.I):
            kept = para.strip()
        else:
            sentences = re.split(r"(?<=[.!?])\s+", para.strip())
            kept = " ".join(x for x in sentences if not re.search(r"\bprizes?\b", x, re.I))
        if kept:
            out.append(kept)
    return out


def _opens_with_fence(text: str) -> bool:
    found = fences(text)
    return bool(found) and found[0].start == 0


def _fence_marks(lines: list[str]) -> set[int]:
    """Indexes of the lines that open or close a fenced block."""
    return {line for f in fences("\n".join(lines)) for line in ((f.start, f.end - 1) if f.closed else (f.start,))}


def _pick_overview(paras: list[str], budget: int) -> list[str]:
    """Paragraphs that state the task first, then the opening ones, in page order."""
    task = re.compile(r"\b(predict|objective|goal|challenge|task|identify|classify|forecast|estimate)", re.I)
    ranked = [i for i, p in enumerate(paras) if task.search(p)]
    ranked += [i for i in range(len(paras)) if i not in ranked]
    chosen: list[int] = []
    used = 0
    for i in ranked:
        if chosen and used + len(paras[i]) > budget:
            continue
        chosen.append(i)
        used += len(paras[i]) + 2
    return [paras[i] for i in sorted(chosen)]


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    if limit < 40:
        return ""
    cut = text[: limit - 8]
    end = max(cut.rfind("\n"), cut.rfind(". ") + 1)
    cut = (cut[:end] if end > limit // 2 else cut).rstrip()
    # A code fence cut open would swallow everything after it in a markdown viewer.
    closing = "\n```" if any(not fence.closed for fence in fences(cut)) else ""
    return cut + " ..." + closing


def _title(flat: list[_Section]) -> str | None:
    generic = {"overview", "description", "dataset description", "data", "evaluation"}
    for sec in flat:
        if sec.level == 1 and sec.heading.lower() not in generic:
            return _clean(sec.heading)
    return None


def summarise(text: str, max_chars: int = 4000) -> str:
    """A noise-free markdown summary: title, overview, evaluation, submission format, data.

    The overview keeps only its first paragraphs because story-telling intros are long and
    say little; evaluation and submission format are kept whole because they decide the task.
    """
    flat = _split(text)
    blocks: dict[str, list[str]] = {"overview": [], "evaluation": [], "submission": [], "data": []}
    started: set[str] = set()
    for sec in flat:
        if sec.category not in blocks:
            continue
        paras = _paragraphs(sec.body)
        # Sub-headings carry meaning (e.g. "Data fields"); the block's opening heading is
        # replaced by the summary's own section name.
        if paras and sec.category in started and sec.level > 0:
            paras.insert(0, f"### {_clean(sec.heading)}")
        if sec.level > 0:
            started.add(sec.category)
        blocks[sec.category].extend(paras)

    def join(paras: list[str]) -> str:
        return "\n\n".join(paras).strip()

    overview = _pick_overview([p for p in blocks["overview"] if not p.startswith("### ")], max_chars // 3)
    parts = [
        ("Overview", join(overview)),
        ("Evaluation", join(blocks["evaluation"])),
        ("Submission format", join(blocks["submission"])),
        ("Data", join(blocks["data"])),
    ]
    title = _title(flat)
    head = f"# {title}\n\n" if title else ""
    budget = max_chars - len(head)
    # The submission format (short, and it fixes the output) first, then evaluation, overview, data.
    order = [2, 1, 0, 3]
    limits: dict[int, int] = {}
    remaining = budget
    for i in order:
        block_len = len(parts[i][1]) + len(parts[i][0]) + 8 if parts[i][1] else 0
        limits[i] = min(block_len, max(0, remaining))
        remaining -= limits[i]
    out = []
    for i, (name, body) in enumerate(parts):
        body = _cut(body, limits[i] - len(name) - 8) if body else ""
        if body:
            out.append(f"## {name}\n\n{body}")
    return _cut(head + "\n\n".join(out), max_chars)


def _fields(line: str) -> list[str]:
    row = next(csv.reader([line.strip()]), [])
    return [f.strip().strip("'\"`").strip() for f in row]


def _is_header(fields: list[str]) -> bool:
    """Column names look like short identifiers, not numbers nor sentences."""
    named = [f for f in fields if f not in _ELISION]
    if len(named) < 2 or any(not f for f in named):
        return False
    # Class columns may be named by digits ("image_id,0,1,...,9") after a named key; a data row
    # repeats values or spells a fraction, a header's class names are distinct whole numbers.
    classes = named[1:] if not _NUMBER.fullmatch(named[0]) and len(set(named)) == len(named) else []
    for f in named:
        whole_class = f in classes and re.fullmatch(r"\d+", f) is not None
        if (_NUMBER.fullmatch(f) and not whole_class) or len(f) > 64:
            return False
        if len(f.split()) > 4 or f.endswith((".", ":", "?", "!")):
            return False
    return True


def _is_row(fields: list[str], width: int) -> bool:
    values = [f for f in fields if f not in _ELISION]
    return bool(values) and (len(fields) == width or any(f in _ELISION for f in fields))


def _header(line: str) -> list[str] | None:
    fields = _fields(line)
    if "," not in line or not _is_header(fields):
        return None
    header = ["..." if f in _ELISION else f for f in fields]
    # Elision only makes sense at the end; anything after it is dropped with it.
    return header[: header.index("...") + 1] if "..." in header else header


def submission_header(text: str) -> list[str] | None:
    """Column names of the submission example in the description, or None.

    Looks first inside code fences, then at unfenced CSV-looking lines, in both cases only
    where the surrounding text is about the submission. A trailing "..." is kept as "..."
    so the caller knows the class list is elided.
    """
    flat = _split(text)
    # Sections titled about the submission first; elsewhere only after a mention of it.
    places = [(s.body, True) for s in flat if s.category == "submission"]
    places += [(s.body, False) for s in flat if s.category != "submission"]
    for body, titled in places:
        lines = body.splitlines()
        for fenced in (True, False):
            found = _scan(lines, fenced, titled)
            if found:
                return found
    return None


def _scan(lines: list[str], fenced: bool, seen_submission: bool) -> list[str] | None:
    in_fence, fence_start = False, -1
    marks = _fence_marks(lines)
    for i, line in enumerate(lines):
        if i in marks:
            in_fence = not in_fence
            fence_start = i
            continue
        if re.search(r"submi|following format|contain a header|file (should|must) (contain|have|look)|for each .{1,60}predict", line, re.I):
            seen_submission = True
        if in_fence != fenced:
            continue
        header = _header(line)
        if header is None:
            continue
        if not seen_submission:
            continue
        if fenced:
            # The header is the fence's first non-empty line.
            if not any(line.strip() for line in lines[fence_start + 1:i]):
                return header
            continue
        nxt = next((line for line in lines[i + 1:] if line.strip()), "")
        if _is_row(_fields(nxt), len(header)):
            return header
    return None


def submission_example_rows(text: str, header: list[str]) -> list[dict[str, str]]:
    """The example rows printed under the submission header, as {column: cell} (may be empty)."""
    lines = text.splitlines()
    marks = _fence_marks(lines)
    wanted = [c for c in header if c != "..."]
    for i, line in enumerate(lines):
        cells = next(csv.reader([line.strip()]), [])
        if [c.strip() for c in cells[: len(wanted)]] != wanted:
            continue
        rows = []
        for j, follow in enumerate(lines[i + 1:], start=i + 1):
            if not follow.strip() or j in marks or follow.strip() in _ELISION:
                break
            values = next(csv.reader([follow.strip()]), [])
            if len(values) < len(wanted):
                break
            rows.append(dict(zip(wanted, (v.strip() for v in values))))
        return rows
    return []
