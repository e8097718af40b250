"""Code and JSON extraction from realistic replies, the repair round through a real server, and memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_server import Reply, ScriptedLLMServer
from pydantic import BaseModel

from agentk.llm import (
    LLMConfig,
    MalformedJSON,
    NoCodeInReply,
    WorkingMemory,
    ask_code,
    ask_json,
    extract_code,
    extract_json,
    make_client,
    user,
)

MODEL = "qwen2.5-coder-7b"

TWO_FENCES = """First, a quick look at the columns:

```python
print(df.columns)
```

Now the full formatter:

```python
import pandas as pd

def format_submission(pred: pd.DataFrame) -> pd.DataFrame:
    out = pred[["id", "Survived"]].rename(columns={"id": "PassengerId"})
    return out.astype({"Survived": int})
```

Run it with `python code_submission_format.py`:

```bash
python code_submission_format.py
```
"""
CUT_OFF = """Here is the metric:

```python
from sklearn.metrics import accuracy_score

def score(y_true, y_pred):
    return accuracy_score(y_true.iloc[:, 1], y_pred.iloc[:, 1])
"""
WRONG_CODE = "```python\ndef forward(df)\n    return df\n```"
PROSE_ONLY = "I would use accuracy here, because the competition page says submissions are evaluated on accuracy."


def test_extract_code_takes_largest_valid_python_fence() -> None:
    code = extract_code(TWO_FENCES)
    assert code.startswith("import pandas as pd") and "def format_submission" in code
    assert "print(df.columns)" not in code and "```" not in code and "bash" not in code


def test_extract_code_variants() -> None:
    assert "accuracy_score" in extract_code(CUT_OFF)  # unclosed fence (max_tokens hit)
    assert extract_code(WRONG_CODE).startswith("def forward(df)")  # the sandbox reports the SyntaxError
    assert extract_code("import numpy as np\nHIGHER_IS_BETTER = True\n") == "import numpy as np\nHIGHER_IS_BETTER = True"
    assert extract_code("```\nx = 1\n```\n```\ny = 2\n```") == "y = 2"  # equal size: the last
    with pytest.raises(NoCodeInReply, match="^no code in the reply: expected a ```python block, got 'I would use"):
        extract_code(PROSE_ONLY)
    for reply in ("Done", "", "```json\n{\"a\": 1}\n```"):
        with pytest.raises(NoCodeInReply):
            extract_code(reply)


def test_extract_json_variants() -> None:
    assert extract_json('{"input_modalities": ["tabular"], "target_modality": "tabular"}')["target_modality"] == "tabular"
    fenced = 'Modalities:\n```json\n{"input_modalities": ["text"], "target_modality": "tabular"}\n```\nDone.'
    assert extract_json(fenced)["input_modalities"] == ["text"]
    prose = 'The plan is {"steps": ["load", "map"], "id_column": "id"} as requested.'
    assert extract_json(prose)["id_column"] == "id"
    with pytest.raises(MalformedJSON, match=r"no valid JSON in the reply \(.* at line 1"):
        extract_json("{'steps': ['load',], id_column: id}")
    with pytest.raises(MalformedJSON, match="double quotes at line 1 column 72"):
        extract_json(MALFORMED)  # never a fragment (the inner list) of a broken object


class Modalities(BaseModel):
    input_modalities: list[str]
    target_modality: str


MALFORMED = """Here are the modalities:
```json
{"input_modalities": ["tabular", "text"], "target_modality": "tabular",}
```"""
INCOMPLETE = '```json\n{"input_modalities": ["tabular"]}\n```'
VALID = '```json\n{"input_modalities": ["tabular", "text"], "target_modality": "tabular"}\n```'


def _client(srv: ScriptedLLMServer, tmp_path: Path):
    cfg = LLMConfig(base_url=srv.base_url, model=MODEL, timeout_s=2.0, max_retries=0)
    return make_client(cfg, tmp_path)


def test_ask_json_repairs_malformed_reply(tmp_path: Path) -> None:
    with ScriptedLLMServer([Reply(MALFORMED), Reply(VALID)]) as srv:
        result = ask_json(_client(srv, tmp_path), [user("Which modalities?")], Modalities.model_validate, stage="modalities")
    assert result == Modalities(input_modalities=["tabular", "text"], target_modality="tabular")
    repair = srv.chat_requests[1].body["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert repair[1]["content"] == MALFORMED and "could not be used: no valid JSON" in repair[2]["content"]


def test_ask_json_repairs_validation_error_then_gives_up(tmp_path: Path) -> None:
    expected = "stage modalities: unusable JSON after 1 repair.*target_modality"
    with ScriptedLLMServer([Reply(INCOMPLETE), Reply(INCOMPLETE)]) as srv, pytest.raises(MalformedJSON, match=expected):
        ask_json(_client(srv, tmp_path), [user("Which modalities?")], Modalities.model_validate, stage="modalities")
    assert "target_modality" in srv.chat_requests[1].body["messages"][-1]["content"]
    assert len(srv.chat_requests) == 2  # exactly one repair round


def test_ask_code_asks_again_when_reply_has_no_code(tmp_path: Path) -> None:
    with ScriptedLLMServer([Reply(PROSE_ONLY), Reply(TWO_FENCES)]) as srv:
        code = ask_code(_client(srv, tmp_path), [user("Write format_submission.")], stage="submission_format")
    assert "def format_submission" in code
    assert "```python" in srv.chat_requests[1].body["messages"][-1]["content"]


def test_working_memory_renders_sections_in_order_and_truncates() -> None:
    memory = WorkingMemory()
    memory.set("ERROR", "Traceback (most recent call last):\n" + "  frame\n" * 500 + "KeyError: 'Survived'")
    memory.set("TASK-SUMMARY", "Predict Survived.")
    memory.set("CODE", "def build_map(raw_dir):\n    ...")
    memory.set("PLAN", "")
    text = memory.render(max_chars_per_entry=300)
    assert text.index("## TASK-SUMMARY") < text.index("## ERROR") < text.index("## CODE")
    assert "## PLAN" not in text  # empty entries are skipped
    assert "```python\ndef build_map" in text
    error = text[text.index("## ERROR"):text.index("## CODE")]
    assert "[truncated" in error and "KeyError: 'Survived'" in error and error.count("frame") < 60
    assert memory.render(only=["CODE"]).startswith("## CODE")
    with pytest.raises(ValueError, match="UPPER-KEBAB"):
        memory.set("plan", "x")
