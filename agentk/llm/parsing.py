"""Getting code and JSON out of a model's reply, with one repair round for JSON (and code).

Models wrap answers in prose, emit several fences (a sketch, then the real thing), forget to
close the last fence when they hit max_tokens, or return JSON with trailing commentary. These
helpers take the most plausible block and say clearly when there is none.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from agentk.core.reading.markdown import fences
from agentk.llm.errors import MalformedJSON, NoCodeInReply
from agentk.llm.types import Message, as_messages

T = TypeVar("T")

_PY_TAGS = {"python", "py", "python3", "ipython", ""}
_JSON_TAGS = {"json", "jsonc", "json5", ""}
_SNIPPET = 120
_MAX_EMBEDDED_STARTS = 200


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, body) of every fenced block, in order; a block the model left open (cut off
    mid-block) runs to the end of the reply."""
    return [(fence.language, fence.body) for fence in fences(text)]


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _looks_like_code(tree: ast.Module) -> bool:
    # "Done" or "Sure" parse as Python names; real code has at least one non-trivial statement
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Name, ast.Constant)):
            continue
        return True
    return False


def extract_code(text: str) -> str:
    """The Python code in a reply: the largest ```python (or untagged) fence that parses, the
    last one on ties; failing that the largest such fence even if it does not parse (the sandbox
    will report the SyntaxError, which is better feedback than "no code"); failing that a bare
    reply that parses as Python."""
    candidates = [body.strip("\n") for tag, body in fenced_blocks(text) if tag in _PY_TAGS and body.strip()]
    if candidates:
        valid = [c for c in candidates if _parses(c)]
        pool = valid or candidates
        best = max(range(len(pool)), key=lambda i: (len(pool[i]), i))
        return pool[best]
    bare = text.strip()
    if bare:
        try:
            tree = ast.parse(bare)
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None and _looks_like_code(tree):
            return bare
    raise NoCodeInReply(f"no code in the reply: expected a ```python block, got {_snippet(text)}")


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole reply, else the last fenced json block that decodes,
    else the first {...} or [...] embedded in prose."""
    bare = text.strip()
    first_error: json.JSONDecodeError | None = None
    try:
        return json.loads(bare)
    except json.JSONDecodeError as exc:
        first_error = exc
    json_fenced = False
    for tag, body in reversed(fenced_blocks(text)):
        if tag in _JSON_TAGS:
            json_fenced = json_fenced or tag != ""
            try:
                return json.loads(body)
            except json.JSONDecodeError as exc:
                first_error = exc
    if json_fenced:
        # the model marked its JSON and it is broken; a fragment of it would be a wrong answer
        raise MalformedJSON(f"no valid JSON in the reply{_where(first_error)}: {_snippet(text)}")
    decoder = json.JSONDecoder()
    for tried, match in enumerate(re.finditer(r"[\[{]", text)):
        if tried >= _MAX_EMBEDDED_STARTS:
            break  # each try may scan the rest of the reply; keep a huge reply linear-ish
        before = match.start() - 1
        while before >= 0 and text[before].isspace():
            before -= 1
        if before >= 0 and text[before] in ":,[{":
            continue  # inside a larger (broken) value, not a value of its own
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, (dict, list)):
            return value
    raise MalformedJSON(f"no valid JSON in the reply{_where(first_error)}: {_snippet(text)}")


def _where(error: json.JSONDecodeError | None) -> str:
    return f" ({error.msg} at line {error.lineno} column {error.colno})" if error else ""


def repair_messages(messages: Sequence[Message], reply: str, problem: str, *, want: str = "JSON") -> list[Message]:
    """The conversation so far, the bad reply, and a short request to fix exactly the problem."""
    fence = "```json" if want == "JSON" else "```python"
    return [
        *messages,
        Message("assistant", reply),
        Message(
            "user",
            f"Your previous reply could not be used: {problem}\n"
            f"Reply again with only the corrected {want} in a single {fence} block, no explanation.",
        ),
    ]


def ask_json(
    client: Any,
    messages: Sequence[Message | dict[str, str]],
    validate: Callable[[Any], T],
    *,
    stage: str,
    repairs: int = 1,
) -> T:
    """Ask, extract JSON, validate; on failure show the model its error and ask again (`repairs` times).

    `validate` takes the decoded value and returns the typed result or raises (ValueError,
    pydantic.ValidationError, MalformedJSON, ...); e.g. `PlanModel.model_validate`.
    """
    msgs = as_messages(messages)
    for round_ in range(repairs + 1):
        reply = client.query(msgs, stage=stage).text
        try:
            return validate(extract_json(reply))
        except (MalformedJSON, ValueError, TypeError, KeyError) as exc:
            problem = _one_line(exc)
            if round_ == repairs:
                raise MalformedJSON(f"stage {stage}: unusable JSON after {repairs} repair round(s): {problem}") from None
            msgs = repair_messages(msgs, reply, problem)
    raise AssertionError("unreachable")


def ask_code(client: Any, messages: Sequence[Message | dict[str, str]], *, stage: str, repairs: int = 1) -> str:
    """Ask for code; when the reply has none, ask once more, then raise NoCodeInReply."""
    msgs = as_messages(messages)
    for round_ in range(repairs + 1):
        reply = client.query(msgs, stage=stage).text
        try:
            return extract_code(reply)
        except NoCodeInReply as exc:
            if round_ == repairs:
                raise NoCodeInReply(f"stage {stage}: {exc}") from None
            msgs = repair_messages(msgs, reply, str(exc), want="Python code")
    raise AssertionError("unreachable")


def _one_line(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic: "field: message" beats the multi-line dump with doc URLs
        try:
            return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in errors())[:400]
        except (TypeError, KeyError):
            pass
    text = " ".join(str(exc).split())
    return text[:400]


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat[:_SNIPPET] + ("…" if len(flat) > _SNIPPET else "")) if flat else "an empty reply"
