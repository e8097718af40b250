"""Which metric a Kaggle description names, and the phrase that names it.

Reading order, most reliable first (the first tier that names a metric decides):

1. a sentence of the evaluation section that talks about scoring ("Submissions are evaluated on ...");
2. any other sentence of the evaluation section that names a metric ("## Metric\\nRMSLE.");
3. a scoring sentence anywhere else (pages without an Evaluation heading say it in the overview);
4. a metric named anywhere (low confidence).

A metric the registry lacks ("mean Dice coefficient", "NDCG") is recognised too, so that its
sentence wins and the answer is "unsupported" rather than a wrong registry name picked further down.
For the same reason, an evaluation section that states "Submissions are evaluated on <something no
pattern knows>" ends the search there (unsupported = that phrase) before tiers 3 and 4.
In tier 1 a sentence stating what submissions are scored on comes before the others: it names
the metric, where "F1-score is the harmonic mean of ..." only explains a part of it (and "score
is" right after a metric's name is not a scoring word at all). A registry metric's cousin that
scores otherwise (a weighted AUC, the log of a per-group MAE, a probabilistic F1, a weighted
multi-label log loss) is recognised as unsupported, not answered with the registry's name.
Within a sentence, the metric the scoring words point at wins; one mentioned after "unlike",
"rather than", "not", "also report", "changed from" (in its clause) does not.

Dice, IoU and "mean average precision at IoU thresholds" name an image metric only on a page
about image objects: the evaluation section (else the page) must speak of bounding boxes
(`map_boxes`) or of masks, pixels, segmentation or run-length encoding (`map_iou`, `dice`,
`iou`). Elsewhere (a word-level Jaccard, a page that does not say what it scores) they stay
unsupported, as a metric the registry lacks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from agentk.core.reading.markdown import Heading, fenced_lines, heading_lines
from agentk.core.metrics.metric_patterns import OBJECT_RES, PATTERNS, Pattern

Source = Literal["evaluation_section", "scoring_sentence", "anywhere", "none"]

EVIDENCE_CHARS = 200
_CONFIDENCE = {"cue_in_section": 0.95, "section": 0.8, "scoring_sentence": 0.75, "anywhere": 0.35}
# Deducted when the deciding sentence also names another metric (a formula, a comparison).
_AMBIGUITY_PENALTY = 0.15


@dataclass(frozen=True)
class MetricGuess:
    """What a description says about its metric.

    `name` is a canonical registry name or None; `unsupported` names a metric the text clearly
    uses but the registry lacks (then `name` is None). `evidence` is the deciding phrase
    (at most 200 characters), `confidence` (0..1) how sure the reading is.
    """

    name: str | None
    evidence: str
    source: Source
    confidence: float
    unsupported: str | None = None


# Words that make a sentence about scoring, not just about the data.
_CUE_RE = re.compile(
    r"\b(evaluat\w*|scored|scoring|scores? (is|are|will be|of)|metric\w*|measured|to measure|judged"
    r"|rank(ed)? (\w+ ){0,3}(by|on|using|according to)|compared (\w+ ){0,6}using|leaderboard (is|uses|will))"
)
# A metric mentioned after these words in its clause is not the one scored.
_NEGATION_RE = re.compile(
    r"\b(unlike|rather than|instead of|not|no longer|also report\w*|reported|previous\w*|prior|formerly"
    r"|replac\w*|except|other than|in addition to|besides|changed? (\w+ ){0,4}from)\b"
)
# "Submissions are evaluated on ...": when such a sentence in the evaluation section names nothing
# known, the metric is one the registry lacks, and a name found further away would be a guess.
_STATEMENT_RE = re.compile(
    r"\b((submissions?|entries|predictions|this competition) (are|is|will be) (evaluated|scored|ranked|judged)"
    r"( (on|by|using|with|based on|according to)\b)?|evaluation metric( for this competition)? (is|will be)"
    r"|score will be)\s*(?P<rest>[^,;:(]{0,60})"
)
_NEGATION_AFTER_RE = re.compile(r"^[^,;:()]*?\b(for reference|for information|(is|are|will) not (be )?used)\b")
_CLAUSE_BREAK_RE = re.compile(r"[,;:()]|\b(but|whereas|while|however)\b")

# ---------------------------------------------------------------------------------------------
# Text preparation


def _plain(text: str) -> tuple[str, list[int]]:
    """Lower-case text with markup, URLs and hyphens turned into single spaces, and for each of
    its characters the offset of the character in `text` it came from."""
    # URLs can spell metric names; LaTeX's \( \) delimiters would split "\(F_1\)-score".
    blanked = re.sub(r"\(https?://[^)]*\)|https?://\S+|\\[()\[\]]", lambda m: " " * len(m.group()), text)
    chars: list[str] = []
    offsets: list[int] = []
    for i, char in enumerate(blanked):
        # Brackets too: a markdown link's text ("micro averaged [F1 score](...)") reads as prose.
        char = " " if char in "-_‐–—*`$\\{}|#[]" or char.isspace() else char.lower()[0]
        if char == " " and (not chars or chars[-1] == " "):
            continue
        chars.append(char)
        offsets.append(i)
    return "".join(chars), offsets


def _without_code(text: str) -> str:
    """The text with fenced code blocks blanked out (same length, so offsets still hold)."""
    code = fenced_lines(text)
    # splitlines(keepends=True) splits where fenced_lines counts lines, and joins back to the text.
    return "".join(re.sub(r"[^\n]", " ", line) if number in code else line
                   for number, line in enumerate(text.splitlines(keepends=True)))


_BOLD_LINE_RE = re.compile(r"^\s*\*\*(.+?)\*\*:?\s*$")
_EVAL_TITLE_RE = re.compile(
    r"^(\d+\.?\s*)?(evaluation( metrics?| criteria| and scoring)?|metrics?|scoring( metric)?)\s*:?$", re.IGNORECASE)
# Plain-text section titles that end an evaluation section (the page's other tabs and sections).
_END_TITLE_RE = re.compile(
    r"^(dataset description|data description|data|the data|files|data files|data fields|columns|timeline"
    r"|competition timeline|prizes?|acknowledg\w*|citation|rules|faq|frequently asked questions|overview"
    r"|description|background|context|getting started|tutorials?|code requirements|kernels? requirements"
    r"|important dates|resources|about\b.*)\s*:?$", re.IGNORECASE)


def _heading(line: str, markdown: Heading | None) -> tuple[int, str] | None:
    """(level, title) when the line is a heading: markdown (level 1..6), bold or plain (level 7)."""
    if markdown is not None:
        return markdown.level, markdown.title.strip("*: ")
    match = _BOLD_LINE_RE.match(line)
    if match:
        return 7, match.group(1).strip(": ")
    stripped = line.strip()
    # Scraped pages keep headings as short lines of their own, without a full stop.
    if stripped and len(stripped) <= 60 and len(stripped.split()) <= 6 and not stripped.endswith((".", ",", ";")):
        return 7, stripped.rstrip(":")
    return None


def _section_spans(text: str) -> list[tuple[int, int]]:
    """Character spans (after the heading line) of every evaluation section."""
    lines = text.splitlines(keepends=True)
    marked = heading_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        head = _heading(lines[i], marked.get(i))
        if head is None or not _EVAL_TITLE_RE.match(head[1]):
            i += 1
            continue
        level, end = head[0], i + 1
        while end < len(lines):
            nxt = _heading(lines[end], marked.get(end))
            if nxt and ((nxt[0] <= level and nxt[0] < 7) or (nxt[0] == 7 and _END_TITLE_RE.match(nxt[1]))):
                break
            if level == 7 and nxt and nxt[0] < 7 and not _EVAL_TITLE_RE.match(nxt[1]):
                break
            end += 1
        spans.append((starts[i + 1], starts[end]))
        i = end
    return spans


def evaluation_section(description: str) -> str | None:
    """The evaluation sections' text (markdown, bold or plain-line "Evaluation"/"Metric" headings,
    each up to the next section), or None when the description has none."""
    text = _without_code(description)
    spans = _section_spans(text)
    if not spans:
        return None
    return "\n\n".join(description[a:b].strip("\n") for a, b in spans)


_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[^a-z\s])")


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans in text[start:end]. A line break ends a sentence unless it only wraps a
    long line of prose (the next line goes on in lower case)."""
    spans: list[tuple[int, int]] = []
    piece_start = start
    for match in re.finditer(r"\n", text[start:end]):
        cut = start + match.start()
        line_start = text.rfind("\n", 0, cut) + 1
        line = text[line_start:cut].rstrip()
        following = text[cut + 1 : end].lstrip(" \t")
        wrapped = len(line) >= 60 and not line.endswith((".", "!", "?", ":")) and following[:1].islower()
        # A clause cut at its comma by a blank line ("evaluated on **X**,\n\nwhich is ...") goes on.
        wrapped = wrapped or (text[piece_start:cut].rstrip().endswith(",") and following.lstrip()[:1].islower())
        if not wrapped:
            spans.extend(_split_piece(text, piece_start, cut))
            piece_start = cut + 1
    spans.extend(_split_piece(text, piece_start, end))
    return spans


def _split_piece(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, cursor = [], start
    for match in _SENTENCE_END_RE.finditer(text, start, end):
        spans.append((cursor, match.start()))
        cursor = match.end()
    spans.append((cursor, end))
    return [(a, b) for a, b in spans if text[a:b].strip()]


# ---------------------------------------------------------------------------------------------
# Reading one sentence


@dataclass(frozen=True)
class _Mention:
    start: int  # in the plain sentence
    end: int
    pattern: Pattern
    negated: bool


def _mentions(plain: str) -> list[_Mention]:
    taken: list[tuple[int, int]] = []
    found: list[_Mention] = []
    for pattern in PATTERNS:
        for match in pattern.regex.finditer(plain):
            a, b = match.span()
            if any(a < y and x < b for x, y in taken):
                continue
            taken.append((a, b))
            found.append(_Mention(a, b, pattern, _negated(plain, a, b)))
    return sorted(found, key=lambda m: m.start)


def _negated(plain: str, start: int, end: int) -> bool:
    breaks = [m.end() for m in _CLAUSE_BREAK_RE.finditer(plain, 0, start)]
    clause_before = plain[breaks[-1] if breaks else 0 : start]
    for match in _NEGATION_RE.finditer(clause_before):
        # "changed from log loss to Brier": only what stands between "from" and "to" is old.
        if not (match.group().endswith("from") and re.search(r"\bto\b", clause_before[match.end() :])):
            return True
    return bool(_NEGATION_AFTER_RE.search(plain[end:]))


def _cue(plain: str, mentions: list[_Mention]) -> int | None:
    """Where the sentence's scoring words start; None when it has none. "score is" right after a
    metric's name ("F1 score is the harmonic mean of ...") explains the metric, it does not score."""
    for match in _CUE_RE.finditer(plain):
        at = match.start()
        if not (match.group().startswith("score") and any(m.start < at <= m.end + 1 for m in mentions)):
            return at
    return None


def _choose(mentions: list[_Mention], cue_at: int | None) -> _Mention | None:
    """The mention the scoring words point at: the first after the cue, else the last before it."""
    candidates = [m for m in mentions if not m.negated]
    if any(not m.pattern.weak for m in candidates):
        candidates = [m for m in candidates if not m.pattern.weak]
    if not candidates:
        return None
    if cue_at is None:
        return candidates[0]
    after = [m for m in candidates if m.end > cue_at]  # "two evaluation metrics" holds its own cue
    return after[0] if after else candidates[-1]


def _evidence(text: str, start: int, end: int, focus: int) -> str:
    """The sentence, whitespace collapsed, cut to EVIDENCE_CHARS around the focus offset."""
    a, b = start, end
    if b - a > EVIDENCE_CHARS:
        a = max(start, min(focus - EVIDENCE_CHARS // 3, end - EVIDENCE_CHARS))
        b = a + EVIDENCE_CHARS
    return " ".join(text[a:b].split())[:EVIDENCE_CHARS]


def _objects(text: str, sections: list[tuple[int, int]]) -> frozenset[str]:
    """The kinds of image objects (`OBJECT_RES`) the evaluation sections, else the page, speak of."""
    plain, _ = _plain(" ".join(text[a:b] for a, b in sections) if sections else text)
    return frozenset(kind for kind, regex in OBJECT_RES.items() if regex.search(plain))


def _read(text: str, span: tuple[int, int], need_cue: bool, tier: str, source: Source,
          objects: frozenset[str] = frozenset()) -> MetricGuess | None:
    plain, offsets = _plain(text[span[0] : span[1]])
    mentions = _mentions(plain)
    cue = _cue(plain, mentions)
    if need_cue and cue is None:
        return None
    chosen = _choose(mentions, cue)
    if chosen is None:
        return None
    others = {m.pattern.label for m in mentions if not m.negated and not m.pattern.weak} - {chosen.pattern.label}
    confidence = _CONFIDENCE[tier] - (_AMBIGUITY_PENALTY if others else 0.0)
    evidence = _evidence(text, span[0], span[1], span[0] + offsets[chosen.start])
    name = chosen.pattern.name
    if chosen.pattern.by_objects:
        name = next((n for kind, n in chosen.pattern.by_objects if kind in objects), None)
    if name is None:
        return MetricGuess(None, evidence, source, confidence, unsupported=chosen.pattern.label)
    return MetricGuess(name, evidence, source, confidence)


def _unnamed_statement(text: str, spans: list[tuple[int, int]]) -> MetricGuess | None:
    """An abstention for an evaluation section that states a metric no pattern knows."""
    for a, b in spans:
        plain, _ = _plain(text[a:b])
        match = _STATEMENT_RE.search(plain)
        rest = match.group("rest").strip(" .") if match else ""
        if rest and not rest.startswith(("as follows", "the following", "below", "as described")):
            return MetricGuess(None, _evidence(text, a, b, a), "evaluation_section", 0.5, unsupported=rest)
    return None


# ---------------------------------------------------------------------------------------------
# Public API


def infer_metric(description: str) -> MetricGuess:
    """The metric a Kaggle description says submissions are scored by, with its evidence.

    Plain "log loss" gives `logloss`; use `for_task` to upgrade it for more than two classes.
    When nothing names a metric, `name` is None with confidence 0: the caller picks a default.
    """
    text = _without_code(description)
    sections = _section_spans(text)
    in_section = [s for a, b in sections for s in _sentences(text, a, b)]
    objects = _objects(text, sections)
    # The sentence that states what submissions are scored on outranks earlier ones that explain
    # a part of the metric ("precision is ...", "the F1 score is the harmonic mean ...").
    stating = [span for span in in_section if _STATEMENT_RE.search(_plain(text[span[0] : span[1]])[0])]
    ordered = stating + [span for span in in_section if span not in stating]
    for need_cue, tier, spans in ((True, "cue_in_section", ordered), (False, "section", in_section)):
        for span in spans:
            guess = _read(text, span, need_cue, tier, "evaluation_section", objects)
            if guess is not None:
                return guess
    unnamed = _unnamed_statement(text, in_section)
    if unnamed is not None:
        return unnamed
    outside = [s for s in _sentences(text, 0, len(text)) if not any(a <= s[0] < b for a, b in sections)]
    for span in outside:
        guess = _read(text, span, True, "scoring_sentence", "scoring_sentence", objects)
        if guess is not None:
            return guess
    for span in outside:
        guess = _read(text, span, False, "anywhere", "anywhere", objects)
        # "accuracy" outside any scoring sentence is everyday English ("forecast accuracy").
        if guess is not None and guess.name != "accuracy":
            return guess
    return MetricGuess(None, "", "none", 0.0)


def detect_metric(description: str) -> str | None:
    """Canonical metric name named by a Kaggle description, or None (see `infer_metric`)."""
    return infer_metric(description).name
