"""`agentk bench` with rivals, on real data: agentk, LightGBM defaults and AutoGluon side by side on
titanic over two held-out splits, with tiny budgets. AutoGluon itself is not required (CI does not
install it): its column must then say "not installed", and its formatting path is exercised with
predictions shaped like its runner's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.bench.run import _ratio, compare, parse_rivals, summary_line
from agentk.bench.rivals.autogluon_rival import autogluon_python, choose_metric
from agentk.bench.rivals.common import NOT_INSTALLED, NOT_TABULAR, SystemResult, TargetFrame, tabular_inputs
from agentk.bench.rivals.memory import PeakRss
from agentk.core.errors import AgentKError
from agentk.grading import grade_file
from agentk.core.sandbox.isolation import Mounts
from agentk.core.sandbox.sandbox import run_python
from agentk.sources import load_competition
from agentk.core.records.workspace import Workspace

pytestmark = pytest.mark.integration

COMPETITIONS = Path(__file__).resolve().parents[2] / "shared" / "competitions"
TITANIC = COMPETITIONS / "titanic"
AGENTK = [sys.executable, "-m", "agentk.cli"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One real `agentk bench` on titanic: 2 splits, both rivals, AutoGluon's venv missing."""
    root = tmp_path_factory.mktemp("bench")
    rows_path = root / "rows.json"
    env = {**os.environ, "AGENTK_AUTOGLUON_PYTHON": str(root / "no-venv" / "bin" / "python")}
    proc = subprocess.run(
        [*AGENTK, "bench", str(TITANIC), "-w", str(root / "ws"), "--time-budget", "3", "--folds", "2",
         "--splits", "2", "--rivals", "lightgbm,autogluon", "--json", str(rows_path)],
        capture_output=True, text=True, timeout=400, cwd=root, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"root": root, "stdout": proc.stdout, "data": json.loads(rows_path.read_text())}


def test_lightgbm_defaults_rival_writes_a_valid_graded_submission_that_beats_the_constant(bench: dict) -> None:
    row = bench["data"]["runs"][0]
    lgb = row["systems"]["lightgbm"]
    assert lgb["status"] == "ok" and lgb["valid_submission"], lgb
    assert lgb["test_score"] > row["constant_score"] + 0.1  # accuracy ~0.8 against ~0.6
    # The same grader on the same split scores the file again to the same number.
    split_source = bench["root"] / "ws" / "_splits" / "split0" / "titanic"
    assert grade_file(Path(lgb["submission_path"]), load_competition(split_source)).score == pytest.approx(lgb["test_score"])
    # Same workspace, same test ids as agentk's own submission.
    ours = pd.read_csv(row["systems"]["agentk"]["submission_path"], dtype=str)
    theirs = pd.read_csv(lgb["submission_path"], dtype=str)
    assert list(theirs.columns) == list(ours.columns) == ["PassengerId", "Survived"]
    assert sorted(theirs["PassengerId"]) == sorted(ours["PassengerId"])


def test_bench_row_has_every_system_with_numbers_where_expected(bench: dict) -> None:
    for row in bench["data"]["runs"]:
        systems = row["systems"]
        assert set(systems) == {"agentk", "lightgbm", "autogluon"}
        for name in ("agentk", "lightgbm"):
            cell = systems[name]
            assert cell["status"] == "ok" and cell["valid_submission"], cell
            assert 0.5 < cell["test_score"] <= 1.0
            assert 0 < cell["time_to_first_submission_s"] <= cell["total_s"] + 0.5
            assert cell["peak_rss_mb"] > 50  # a python with pandas at least
        assert systems["autogluon"]["status"] == NOT_INSTALLED
        assert systems["autogluon"]["test_score"] is None
    stdout = bench["stdout"]
    assert "side by side" in stdout and "peak MB" in stdout and "first sub (s)" in stdout
    assert "not installed (make autogluon)" in stdout
    assert "AutoGluon scored no competition" in stdout and "LightGBM defaults on" in stdout


def test_two_splits_hold_out_different_rows_and_report_a_mean(bench: dict) -> None:
    runs = bench["data"]["runs"]
    assert [r["split"] for r in runs] == [0, 1]
    ids = []
    for split in (0, 1):
        test = pd.read_csv(bench["root"] / "ws" / f"split{split}" / "titanic" / "raw" / "data" / "test.csv", dtype=str)
        ids.append(set(test["PassengerId"]))
    assert len(ids[0]) == len(ids[1]) == 90 and ids[0] != ids[1]
    [comparison] = bench["data"]["comparison"]
    assert comparison["splits"] == [0, 1]
    for name in ("agentk", "lightgbm"):
        cell = comparison["systems"][name]
        scores = [r["systems"][name]["test_score"] for r in runs]
        assert cell["scored"] == 2 and cell["mean"] == pytest.approx(np.mean(scores))
        assert cell["std"] == pytest.approx(np.std(scores, ddof=1))
    assert "(n=2)" in bench["stdout"]


def test_autogluon_formatting_path_turns_runner_predictions_into_a_valid_submission(bench: dict) -> None:
    """Predictions shaped like autogluon_runner.py's (labels as file text, probabilities per label)
    go through the sandboxed formatter and the same validation and grader as every system."""
    from agentk.bench.rivals.common import finish, rival_dir

    workspace = Workspace(bench["root"] / "ws" / "split0" / "titanic")
    folder = rival_dir(workspace, "fake-autogluon")
    test = pd.read_csv(workspace.raw / "data" / "test.csv", dtype={"PassengerId": str})
    female = (test["Sex"] == "female").to_numpy(dtype=float)
    predictions = folder / "predictions"
    predictions.mkdir(exist_ok=True)
    # Label order reversed on purpose: the formatter must match labels, not positions.
    pd.DataFrame({"id": test["PassengerId"], "Survived": np.where(female > 0, "1", "0"),
                  "Survived__proba__0": 0.1 + 0.8 * female, "Survived__proba__1": 0.9 - 0.8 * female}).to_csv(predictions / "predictions.csv", index=False)
    (predictions / "predictions.json").write_text(json.dumps({"targets": {"Survived": {"classes": ["1", "0"]}}}))
    submission = folder / "submission.csv"
    execution = run_python(["-m", "agentk.bench.rivals.frames", str(workspace.root), str(predictions), "--out", str(submission)],
                           cwd=folder, mounts=Mounts.workspace(workspace.root, write=[]))
    assert execution.ok, execution.error_summary()
    result = finish(SystemResult("fake-autogluon"), workspace, load_competition(bench["root"] / "ws" / "_splits" / "split0" / "titanic"), submission)
    assert result.status == "ok" and result.valid_submission
    written = pd.read_csv(submission, dtype=str).set_index("PassengerId")
    expected = pd.Series(np.where(female > 0, "1", "0"), index=test["PassengerId"])
    assert (written["Survived"] == expected.loc[written.index]).all()  # the gender model, not its mirror
    assert result.test_score > 0.7


def test_missing_autogluon_venv_is_a_status_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentk.bench.rivals import autogluon_rival

    monkeypatch.delenv("AGENTK_AUTOGLUON_PYTHON", raising=False)
    monkeypatch.setattr(autogluon_rival, "DEFAULT_PYTHON", tmp_path / ".venv-autogluon" / "bin" / "python")
    assert autogluon_python() is None
    # No workspace is even looked at when the interpreter is missing.
    result = autogluon_rival.run_autogluon(Workspace(tmp_path / "nowhere"), load_competition(TITANIC), 5.0)
    assert result.status == "not installed (make autogluon)" and result.test_score is None


def test_competition_metrics_map_to_autogluon_eval_metrics() -> None:
    binary, multi, regression = (TargetFrame("y", t, None) for t in ("binary", "multiclass", "regression"))
    assert choose_metric("accuracy", binary).eval_metric == "accuracy"
    assert choose_metric("multiclass_logloss", multi).eval_metric == "log_loss"
    assert choose_metric("quadratic_weighted_kappa", multi).eval_metric == "quadratic_kappa"
    assert choose_metric("f1", multi).eval_metric == "f1_macro"
    log = choose_metric("rmsle", regression)
    assert log.eval_metric == "root_mean_squared_error" and log.log_target
    assert choose_metric("rmse_log", regression).log_target
    fallback = choose_metric("accuracy", regression)
    assert fallback.eval_metric is None and "default" in fallback.note
    assert choose_metric("no-such-metric", binary).eval_metric is None


def test_ratio_to_autogluon_is_oriented_so_above_one_is_better() -> None:
    assert _ratio(0.9, 0.8, True) == pytest.approx(1.125)
    assert _ratio(0.4, 0.5, False) == pytest.approx(1.25)  # lower loss than AutoGluon: > 1
    assert _ratio(-0.1, 0.5, True) is None and _ratio(0.5, None, True) is None
    cell = {"status": "ok", "time_to_first_submission_s": 1.0, "total_s": 2.0, "peak_rss_mb": 10.0, "notes": []}
    rows = [{"competition": "c", "metric": "rmse", "higher_is_better": False, "split": None, "tabular": True,
             "systems": {"agentk": {**cell, "test_score": 1.0}, "lightgbm": {**cell, "test_score": 2.0},
                         "autogluon": {**cell, "test_score": 1.0}}}]
    assert summary_line(compare(rows)) == "agentk >= AutoGluon on 1/1 tabular competitions; > LightGBM defaults on 1/1; both on 1/1"


def test_peak_memory_sees_a_child_process(tmp_path: Path) -> None:
    with PeakRss(interval_s=0.05) as peak:
        subprocess.run([sys.executable, "-c", "import time; b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(0.5)"], check=True)
    assert 250 < peak.mb < 2000
    # The peak names the process that made it: this interpreter, with its -c.
    command, mb = peak.peak_parts[0]
    assert command.startswith(Path(sys.executable).name + " -c") and 250 < mb < 2000
    assert peak.breakdown().endswith(command) and " MB " in peak.breakdown()


def test_rivals_option_is_validated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from agentk.cli import app

    assert parse_rivals(None) == ("lightgbm", "autogluon")
    assert parse_rivals("none") == () and parse_rivals("autogluon") == ("autogluon",)
    with pytest.raises(AgentKError):
        parse_rivals("xgboost")
    # In-process: the refusal comes before any run, and a fresh interpreter would cost ~5 s.
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["bench", str(TITANIC), "-w", str(tmp_path), "--rivals", "xgboost"])
    assert result.exit_code == 2 and result.stderr.strip().startswith("error: --rivals")
    assert len(result.stderr.strip().splitlines()) == 1


def test_image_competitions_are_not_tabular_for_the_rivals(tmp_path: Path) -> None:
    # An image-folder layout has no CSVs at all: the status says why the rival sits out.
    workspace = Workspace(tmp_path / "digits")
    workspace.setup.mkdir(parents=True)
    (workspace.setup / "modalities.json").write_text(json.dumps({"input_modalities": ["image"]}))
    result = SystemResult("lightgbm")
    assert tabular_inputs(workspace, result) is None
    assert result.status == NOT_TABULAR
