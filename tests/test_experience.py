"""Experience memory (Agent K D.2): attempt logs become error -> fix records in a real lancedb
store on disk, embedded with the real bundled MiniLM model, and retrieved as the LLM policy's
TIPS entry when a stage fails in another competition."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentk.sources import load_competition
from agentk.core.records.workspace import Workspace
from curriculum.experience import (
    Experience,
    ExperienceStore,
    experiences_from_attempts,
    ingest_attempts,
    render_tips,
    similar_fixes,
)
from setup_pipeline.llm_policy.policy import LLMPolicy
from setup_pipeline.policy import StageContext
from setup_pipeline.stages import METRIC, PLAN, TARGET_MAP

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"

TITANIC_BAD = "def build_map():\n    df = pd.read_csv(RAW / 'data/train.csv')\n    return df[['PassengerId', 'Survived']]\n"
TITANIC_FIX = (
    "def build_map():\n    df = pd.read_csv(RAW / 'data/train.csv', dtype={'PassengerId': str})\n"
    "    return df[['PassengerId', 'Survived']].rename(columns={'PassengerId': 'id'})\n"
)
METRIC_BAD = "HIGHER_IS_BETTER = True\n\ndef score(y_true, y_pred):\n    import lightgbm\n    return 0.0\n"
ID_ERROR = "train_tab_target_map.csv: the first column must be named 'id' (found ['PassengerId', 'Survived'])"
METRIC_ERROR = "code_metric.py failed: ModuleNotFoundError: No module named 'lightgbm'"


def stage_line(stage: str, attempt: int, passed: bool, content: str, problems: list[str], *, declined: bool = False, policy: str = "hybrid") -> dict:
    """One logs/attempts.jsonl record as setup_pipeline.mdp writes it."""
    return {
        "kind": "stage", "stage": stage, "attempt": attempt, "policy": policy, "passed": passed,
        "declined": declined, "problems": problems, "plan": "", "content": content,
        "content_sha1": "", "output": "", "elapsed_s": 0.5,
    }


def titanic_log(path: Path) -> Path:
    lines = [
        stage_line("summarise", 1, True, "# Titanic", []),
        stage_line("train_target_map", 1, False, TITANIC_BAD, [ID_ERROR]),
        stage_line("train_target_map", 2, False, "", ["llm policy declined: the model wrote no code"], declined=True),
        stage_line("train_target_map", 3, True, TITANIC_FIX, []),
        {"kind": "meta", "stage": "maps_consistent", "attempt": 1, "policy": "hybrid", "passed": True, "problems": [], "covers": [], "elapsed_s": 0.1},
        stage_line("metric", 1, False, METRIC_BAD, [METRIC_ERROR]),
        stage_line("metric", 2, False, METRIC_BAD, [METRIC_ERROR]),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"kind": "stage", "sta', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the module: the model loads once; each test reopens the table from disk."""
    root = tmp_path_factory.mktemp("workspaces")
    store = ExperienceStore(root / "_memory" / "experience.lance")
    assert ingest_attempts(store, "titanic", titanic_log(root / "titanic" / "logs" / "attempts.jsonl")) == 2
    spaceship = [
        stage_line("train_target_map", 1, False, "def build_map():\n    return None\n", ["build_map() returned None, expected a DataFrame"]),
        stage_line("train_target_map", 2, True, "def build_map():\n    return pd.read_csv(RAW / 'data/train.csv')[['PassengerId', 'Transported']].rename(columns={'PassengerId': 'id'})\n", []),
    ]
    log = root / "spaceship" / "logs" / "attempts.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("".join(json.dumps(line) + "\n" for line in spaceship), encoding="utf-8")
    assert ingest_attempts(store, "spaceship-titanic", log) == 1
    return root / "_memory" / "experience.lance"


def test_attempt_log_pairs_failures_with_fixes_and_keeps_negatives(tmp_path: Path) -> None:
    text = titanic_log(tmp_path / "attempts.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines() if line.endswith("}")]
    found = experiences_from_attempts("titanic", records)
    fixed = [e for e in found if e.fixed]
    negative = [e for e in found if not e.fixed]
    assert [(e.stage, e.error, e.fix_code, e.failed_code) for e in fixed] == [("train_target_map", ID_ERROR, TITANIC_FIX, TITANIC_BAD)]
    assert [(e.stage, e.error, e.fix_code) for e in negative] == [("metric", METRIC_ERROR, "")]


def test_similar_fixes_finds_a_paraphrased_error_in_another_competition(store_dir: Path) -> None:
    store = ExperienceStore(store_dir)
    error = "train_tab_target_map.csv: the id column is called 'Id' but the map's first column has to be 'id'"
    fixes = similar_fixes(store, "train_target_map", error, k=1, exclude_competition="house-prices")
    assert [(f.competition, f.fix_code) for f in fixes] == [("titanic", TITANIC_FIX)]
    ranked = similar_fixes(store, "train_target_map", error, k=3)
    assert [f.competition for f in ranked] == ["titanic", "spaceship-titanic"]


def test_similar_fixes_excludes_the_same_competition_and_other_stages(store_dir: Path) -> None:
    store = ExperienceStore(store_dir)
    fixes = similar_fixes(store, "train_target_map", ID_ERROR, k=3, exclude_competition="titanic")
    assert [f.competition for f in fixes] == ["spaceship-titanic"]
    assert similar_fixes(store, "test_input_map_tab", ID_ERROR) == []


def test_negative_experiences_are_stored_but_never_offered_as_fixes(store_dir: Path) -> None:
    store = ExperienceStore(store_dir)
    negatives = [e for e in store.all() if not e.fixed]
    assert [(e.competition, e.stage, e.failed_code) for e in negatives] == [("titanic", "metric", METRIC_BAD)]
    assert similar_fixes(store, "metric", METRIC_ERROR) == []
    nearest = store.nearest("metric", "No module named 'lightgbm'", fixed=False)
    assert nearest and nearest[0][0].error == METRIC_ERROR and nearest[0][1] < 0.3


def test_reingest_adds_nothing_and_the_store_persists(store_dir: Path) -> None:
    reopened = ExperienceStore(store_dir)  # a fresh connection reads what the fixture wrote
    assert len(reopened) == 3
    log = store_dir.parent.parent / "titanic" / "logs" / "attempts.jsonl"
    assert ingest_attempts(reopened, "titanic", log) == 0
    assert len(ExperienceStore(store_dir)) == 3
    assert ingest_attempts(reopened, "titanic", store_dir.parent / "missing.jsonl") == 0


def test_render_tips_quotes_competition_stage_and_code_within_budget() -> None:
    fix = Experience(competition="titanic", stage="train_target_map", error=ID_ERROR, fix_code=TITANIC_FIX, fixed=True)
    text = render_tips([fix, fix.model_copy(update={"competition": "other", "fix_code": "x = 1\n" * 500})], max_chars=1200)
    assert "A similar error in titanic at train_target_map" in text
    assert f"```python\n{TITANIC_FIX.strip()}\n```" in text
    assert "other" not in text and len(text) <= 1200  # the second tip did not fit: left out, not cut
    assert render_tips([]) == ""


@pytest.fixture()
def house_prices(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(SHARED / "titanic").prepare(workspace.raw)  # any raw view will do for the prompt
    return workspace


def test_llm_prompt_shows_tips_for_a_failed_stage(store_dir: Path, house_prices: Workspace) -> None:
    policy = LLMPolicy(client=None, experience=ExperienceStore(store_dir), competition_id="house-prices")  # type: ignore[arg-type]
    error = "train_tab_target_map.csv: the first column must be named 'id' (found ['Id', 'SalePrice'])"
    text = "\n".join(m.content for m in policy.messages(TARGET_MAP, StageContext(house_prices, attempt=2, last_error=error)))
    assert "## TIPS" in text and "A similar error in titanic at train_target_map" in text
    assert TITANIC_FIX.strip() in text
    assert text.index("## ERROR") < text.index("## TIPS") < text.index("## STAGE GOAL")
    first_try = "\n".join(m.content for m in policy.messages(TARGET_MAP, StageContext(house_prices, attempt=1)))
    assert "## TIPS" not in first_try
    # The same stage has fixes, but none of an error like this one: no tip beats a misleading one.
    unrelated = StageContext(house_prices, attempt=2, last_error="code_train_target_map.py timed out after 300 s")
    assert "## TIPS" not in "\n".join(m.content for m in policy.messages(TARGET_MAP, unrelated))
    assert "## TIPS" not in "\n".join(m.content for m in policy.messages(METRIC, StageContext(house_prices, attempt=2, last_error=METRIC_ERROR)))
    plan_ctx = StageContext(house_prices, attempt=2, last_error="column 'Passenger' appears in no data file header")
    assert "## TIPS" not in "\n".join(m.content for m in policy.messages(PLAN, plan_ctx))
