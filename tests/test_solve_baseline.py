"""End-to-end baseline solves on hand-built setup workspaces made from real competition data.

Each workspace follows docs/architecture.md: input maps, target maps, target_info.json and the
three generated modules written as plain Python, exactly what a setup policy would leave behind.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageDraw

from solve_pipeline.baseline import make_folds, ranked_candidates
from solve_pipeline.baseline_models import LightGBMModel, LinearModel, ModelOptions
from solve_pipeline.dataset import CATEGORY, DATE_PART, build_features, iterate_batches
from solve_pipeline.setup_modules import SetupArtifacts, TargetSpec, load_setup_module
from solve_pipeline.submission_check import validate_submission

COMPETITIONS = Path(__file__).resolve().parents[2] / "shared" / "competitions"
REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


CLASSIFICATION_TRANSFORM = '''
import pandas as pd
TARGET = {target!r}
CLASSES = {classes!r}

def forward(df):
    out = df[["id"]].copy()
    out[TARGET] = df[TARGET].map({{c: i for i, c in enumerate(CLASSES)}}).astype(int)
    return out

def inverse(df):
    out = df[["id"]].copy()
    out[TARGET] = [CLASSES[int(i)] for i in df[TARGET]]
    return out

def target_info(df):
    return {{"targets": [{{"column": TARGET, "task": {task!r}, "classes": CLASSES}}]}}
'''

REGRESSION_TRANSFORM = '''
import numpy as np
TARGET = {target!r}

def forward(df):
    out = df[["id"]].copy()
    out[TARGET] = np.log1p(df[TARGET].astype(float))
    return out

def inverse(df):
    out = df[["id"]].copy()
    out[TARGET] = np.expm1(df[TARGET].astype(float))
    return out

def target_info(df):
    return {{"targets": [{{"column": TARGET, "task": "regression", "classes": None}}]}}
'''

LABEL_FORMAT = '''
def format_submission(pred):
    return pred[["id", {target!r}]].rename(columns={{"id": {id_name!r}}})
'''

PROBA_FORMAT = '''
CLASSES = {classes!r}

def format_submission(pred):
    out = pred[["id"]].copy()
    for label in CLASSES:
        out[label] = pred[{target!r} + "__proba__" + str(label)].to_numpy()
    return out
'''

ACCURACY_METRIC = '''
from sklearn.metrics import accuracy_score
HIGHER_IS_BETTER = True

def score(y_true, y_pred):
    truth = y_true.set_index("id")[{target!r}]
    guess = y_pred.set_index("id")[{target!r}].reindex(truth.index)
    return float(accuracy_score(truth.astype(str), guess.astype(str)))
'''

LOGLOSS_METRIC = '''
from sklearn.metrics import log_loss
HIGHER_IS_BETTER = False
CLASSES = {classes!r}

def score(y_true, y_pred):
    truth = y_true.set_index("id")[{target!r}]
    proba = y_pred.set_index("id").reindex(truth.index)
    columns = [{target!r} + "__proba__" + str(c) for c in CLASSES]
    return float(log_loss(truth, proba[columns].to_numpy(), labels=CLASSES))
'''

RMSE_LOG_METRIC = '''
import numpy as np
HIGHER_IS_BETTER = False

def score(y_true, y_pred):
    truth = y_true.set_index("id")[{target!r}].astype(float)
    guess = y_pred.set_index("id")[{target!r}].reindex(truth.index).astype(float)
    return float(np.sqrt(np.mean((np.log(truth) - np.log(guess.clip(lower=1.0))) ** 2)))
'''


def write_workspace(root: Path, *, inputs: dict[str, tuple[pd.DataFrame, pd.DataFrame]],
                    targets: pd.DataFrame, test_ids: list[str], spec: dict, id_name: str,
                    metric: str, formatter: str, sample: pd.DataFrame | None) -> Path:
    """Lay out raw/ and setup/ as the setup stages would, running forward() to transform."""
    setup = root / "setup"
    setup.mkdir(parents=True, exist_ok=True)
    for modality, (train, test) in inputs.items():
        train.to_csv(setup / f"train_{modality}_input_map.csv", index=False)
        test.to_csv(setup / f"test_{modality}_input_map.csv", index=False)
    targets.to_csv(setup / "train_tab_target_map.csv", index=False)
    column, classes, task = spec["column"], spec.get("classes"), spec["task"]
    if classes is None:
        transform = REGRESSION_TRANSFORM.format(target=column)
    else:
        transform = CLASSIFICATION_TRANSFORM.format(target=column, classes=classes, task=task)
    (setup / "code_transform_tab_target_train.py").write_text(transform)
    (setup / "code_submission_format.py").write_text(
        formatter.format(target=column, id_name=id_name, classes=classes))
    (setup / "code_metric.py").write_text(metric.format(target=column, classes=classes))
    module = load_setup_module(setup / "code_transform_tab_target_train.py", f"t_{root.name}")
    module.forward(targets).to_csv(setup / "train_tab_target_map_transformed.csv", index=False)
    (setup / "target_info.json").write_text(json.dumps(module.target_info(targets)))
    # The formatter on a dummy frame, as the submission_format stage leaves it.
    dummy = pd.DataFrame({"id": test_ids[:3]})
    dummy[column] = (classes or [1.0])[0]
    for label in classes or []:
        dummy[f"{column}__proba__{label}"] = 1.0 / len(classes)
    (load_setup_module(setup / "code_submission_format.py", f"f_{root.name}")
     .format_submission(dummy).to_csv(setup / "submission_format_check.csv", index=False))
    if sample is not None:
        (root / "raw" / "data").mkdir(parents=True, exist_ok=True)
        sample.to_csv(root / "raw" / "data" / "sample_submission.csv", index=False)
    return root


def split_rows(frame: pd.DataFrame, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    test = frame.sample(frac=0.2, random_state=seed)
    return frame.drop(test.index).reset_index(drop=True), test.reset_index(drop=True)


def titanic_workspace(root: Path) -> Path:
    raw = pd.read_csv(COMPETITIONS / "titanic/data/train.csv")
    raw["id"] = raw["PassengerId"].astype(str)
    raw["Empty"] = np.nan  # an all-missing column must simply be dropped
    train, test = split_rows(raw)
    features = ["id", "Pclass", "Sex", "Age", "Fare", "Empty"]
    sample = pd.DataFrame({"PassengerId": test["id"], "Survived": 0})
    return write_workspace(
        root, inputs={"tab": (train[features], test[features])}, targets=train[["id", "Survived"]],
        test_ids=test["id"].tolist(), spec={"column": "Survived", "task": "binary", "classes": [0, 1]},
        id_name="PassengerId", metric=ACCURACY_METRIC, formatter=LABEL_FORMAT, sample=sample)


def spooky_workspace(root: Path) -> Path:
    raw = pd.read_csv(COMPETITIONS / "spooky-author-identification/data/train.csv", nrows=1500)
    train, test = split_rows(raw)
    classes = ["EAP", "HPL", "MWS"]
    sample = pd.DataFrame({"id": test["id"], **{c: 1 / 3 for c in classes}})
    return write_workspace(
        root, inputs={"txt": (train[["id", "text"]], test[["id", "text"]])},
        targets=train[["id", "author"]], test_ids=test["id"].tolist(),
        spec={"column": "author", "task": "multiclass", "classes": classes}, id_name="id",
        metric=LOGLOSS_METRIC, formatter=PROBA_FORMAT, sample=sample)


def house_workspace(root: Path) -> Path:
    raw = pd.read_csv(COMPETITIONS / "house-prices-advanced-regression-techniques/data/train.csv")
    raw = raw.rename(columns={"Id": "id"})
    raw["id"] = raw["id"].astype(str)
    # A real date, written the way many competitions ship them, to exercise date expansion.
    raw["SoldDate"] = raw["YrSold"].astype(str) + "-" + raw["MoSold"].astype(str).str.zfill(2) + "-15"
    train, test = split_rows(raw)
    features = [c for c in raw.columns if c != "SalePrice"]
    sample = pd.DataFrame({"Id": test["id"], "SalePrice": 180000.0})
    return write_workspace(
        root, inputs={"tab": (train[features], test[features])}, targets=train[["id", "SalePrice"]],
        test_ids=test["id"].tolist(), spec={"column": "SalePrice", "task": "regression"},
        id_name="Id", metric=RMSE_LOG_METRIC, formatter=LABEL_FORMAT, sample=sample)


def shapes_workspace(root: Path, n: int = 60) -> Path:
    """Filled circles versus filled squares of varied size and position, drawn with Pillow."""
    rng = np.random.default_rng(0)
    images = root / "raw" / "data" / "images"
    images.mkdir(parents=True)
    rows = []
    for i in range(n):
        shape = "circle" if i % 2 else "square"
        canvas = Image.new("L", (32, 32), 0)
        draw = ImageDraw.Draw(canvas)
        half = int(rng.integers(9, 14))
        cx, cy = 16 + int(rng.integers(-2, 3)), 16 + int(rng.integers(-2, 3))
        box = (cx - half, cy - half, cx + half, cy + half)
        (draw.ellipse if shape == "circle" else draw.rectangle)(box, fill=255)
        canvas.save(images / f"img{i}.png")
        rows.append({"id": f"img{i}", "path": f"../raw/data/images/img{i}.png", "shape": shape})
    frame = pd.DataFrame(rows)
    train, test = frame.iloc[:48], frame.iloc[48:]
    return write_workspace(
        root, inputs={"img": (train[["id", "path"]], test[["id", "path"]])},
        targets=train[["id", "shape"]], test_ids=test["id"].tolist(),
        spec={"column": "shape", "task": "binary", "classes": ["circle", "square"]}, id_name="id",
        metric=ACCURACY_METRIC, formatter=LABEL_FORMAT,
        sample=pd.DataFrame({"id": test["id"], "shape": "circle"}))


def run_solver(workspace: Path, *args: str) -> tuple[dict, list[dict]]:
    completed = subprocess.run(
        [PYTHON, "-m", "solve_pipeline.baseline", str(workspace), *args],
        capture_output=True, text=True, timeout=240, cwd=REPO,
    )
    assert completed.returncode == 0, completed.stderr[-3000:] + completed.stdout[-3000:]
    events = [json.loads(line) for line in completed.stdout.splitlines() if line.startswith("{")]
    result = json.loads((workspace / "solve" / "solve_result.json").read_text())
    return result, events


def check_solved(workspace: Path, result: dict, events: list[dict], sample_name: str = "sample_submission.csv") -> None:
    submission = workspace / "submissions" / "submission.csv"
    assert validate_submission(submission, sample_path=workspace / "raw" / "data" / sample_name) == []
    assert result["model"] in result["cv"]
    assert result["validation_score"] == result["cv"][result["model"]]
    assert 0 < result["time_to_first_submission_s"] <= result["elapsed_s"]
    kinds = {e["event"] for e in events}
    assert {"start", "fold", "model", "submission", "done"} <= kinds
    assert "constant" in result["cv"] and len(result["cv"]) >= 2


@pytest.fixture(scope="module")
def titanic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return titanic_workspace(tmp_path_factory.mktemp("titanic"))


def test_titanic_light(titanic: Path, tmp_path: Path) -> None:
    out = tmp_path / "light.csv"
    result, events = run_solver(titanic, "--light", "--out", str(out))
    assert validate_submission(out, sample_path=titanic / "raw/data/sample_submission.csv") == []
    assert result["folds"] == 2 and result["n_train"] == 600 and result["n_train_total"] == 713
    assert result["higher_is_better"] is True
    assert result["validation_score"] > 0.70 > result["cv"]["constant"]
    fold_events = [e for e in events if e["event"] == "fold"]
    assert {e["model"] for e in fold_events} >= {"constant", "linear", "lightgbm"}
    assert all(e["score"] is None or 0 <= e["score"] <= 1 for e in fold_events)
    assert result["candidates"] == []  # the meta check's light solve leaves the real submissions alone


def test_titanic_normal(titanic: Path) -> None:
    result, events = run_solver(titanic, "--folds", "3", "--seed", "1")
    check_solved(titanic, result, events)
    assert result["folds"] == 3 and result["n_train"] == 713 and result["n_test"] == 178
    assert result["validation_score"] > 0.75
    assert result["cv"]["constant"] < 0.65
    submission = pd.read_csv(titanic / "submissions" / "submission.csv")
    assert set(submission["Survived"]) <= {0, 1} and submission["Survived"].nunique() == 2
    oof = pd.read_csv(titanic / "solve" / "predictions" / f"{result['model']}_oof.csv")
    assert list(oof.columns) == ["id", "Survived", "Survived__proba__0", "Survived__proba__1"]
    assert np.allclose(oof[["Survived__proba__0", "Survived__proba__1"]].sum(axis=1), 1.0)


def test_titanic_candidates_best_first(titanic: Path) -> None:
    result, _ = run_solver(titanic, "--folds", "3")
    ranked = result["candidates"]
    assert {c["model"] for c in ranked} == set(result["cv"])
    assert [c["validation_score"] for c in ranked] == sorted(result["cv"].values(), reverse=True)
    assert ranked[0]["model"] == result["model"]
    sample = titanic / "raw/data/sample_submission.csv"
    for candidate in ranked:
        path = titanic / candidate["path"]
        assert path == titanic / "submissions" / "candidates" / f"{candidate['model']}.csv"
        assert validate_submission(path, sample_path=sample) == []
    # The best candidate went through the same formatter as the final submission: same bytes.
    assert (titanic / ranked[0]["path"]).read_bytes() == (titanic / "submissions" / "submission.csv").read_bytes()


def test_ranked_candidates_follow_the_metric_direction() -> None:
    found = [{"model": "a", "validation_score": 0.5}, {"model": "b", "validation_score": 0.2},
             {"model": "c", "validation_score": 0.5}, {"model": "d", "validation_score": 0.9}]
    assert [c["model"] for c in ranked_candidates(found, higher_is_better=True)] == ["d", "a", "c", "b"]
    # Lower is better (log loss, RMSE): ties keep the solver's order.
    assert [c["model"] for c in ranked_candidates(found, higher_is_better=False)] == ["b", "a", "c", "d"]


def test_time_budget_still_submits(titanic: Path, tmp_path: Path) -> None:
    out = tmp_path / "budget.csv"
    result, events = run_solver(titanic, "--time-budget", "0", "--out", str(out))
    assert result["model"] == "constant"
    assert any(e["event"] == "skip" and "budget" in e["reason"] for e in events)
    assert validate_submission(out, sample_path=titanic / "raw/data/sample_submission.csv") == []


def test_spooky_text(tmp_path: Path) -> None:
    workspace = spooky_workspace(tmp_path / "spooky")
    result, events = run_solver(workspace, "--light")
    check_solved(workspace, result, events)
    assert result["higher_is_better"] is False
    assert result["validation_score"] < 1.0 < result["cv"]["constant"]
    submission = pd.read_csv(workspace / "submissions" / "submission.csv")
    assert np.allclose(submission[["EAP", "HPL", "MWS"]].sum(axis=1), 1.0)


def test_house_regression(tmp_path: Path) -> None:
    workspace = house_workspace(tmp_path / "house")
    result, events = run_solver(workspace, "--light")
    check_solved(workspace, result, events)
    assert result["validation_score"] < 0.25 and result["cv"]["constant"] > 0.35
    submission = pd.read_csv(workspace / "submissions" / "submission.csv")
    # expm1 brought predictions back to dollars.
    assert 50_000 < submission["SalePrice"].median() < 400_000


def test_image_shapes(tmp_path: Path) -> None:
    workspace = shapes_workspace(tmp_path / "shapes")
    result, events = run_solver(workspace, "--light")
    check_solved(workspace, result, events)
    assert result["validation_score"] >= 0.8


def test_features_titanic_and_batches(titanic: Path) -> None:
    artifacts = SetupArtifacts.load(titanic)
    features = build_features(artifacts)
    assert features.train_ids == artifacts.target_map["id"].tolist()
    assert features.tab_train.shape == (713, 4)  # Empty dropped
    assert features.tab_names == ["Pclass", "Sex", "Age", "Fare"]
    assert features.tab_kinds[1] == CATEGORY
    assert np.isnan(features.tab_train[:, 2]).sum() > 100  # Age keeps its missing values
    batch = next(iterate_batches(features, 32, targets=np.arange(713)))
    assert batch["tab"].shape == (32, 4) and batch["target"].tolist() == list(range(32))
    assert not batch["tab"].isnan().any()


def test_features_dates_text_images(tmp_path: Path) -> None:
    house = SetupArtifacts.load(house_workspace(tmp_path / "house"))
    features = build_features(house)
    assert "SoldDate__month" in features.tab_names and "SoldDate__year" in features.tab_names
    assert features.tab_kinds[features.tab_names.index("SoldDate__month")] == DATE_PART
    column = features.tab_names.index("SoldDate__month")
    month = house.train_maps["tab"].set_index("id").loc[features.train_ids, "MoSold"]
    assert np.array_equal(features.tab_train[:, column], month.to_numpy(dtype=float))

    spooky = SetupArtifacts.load(spooky_workspace(tmp_path / "spooky"))
    text = build_features(spooky, max_text_features=2000)
    assert text.text_train.shape[0] == 1200 and 0 < text.text_train.shape[1] <= 2000
    assert text.text_test.shape == (300, text.text_train.shape[1])
    assert text.tab_names == ["text__len", "text__words"]

    shapes = SetupArtifacts.load(shapes_workspace(tmp_path / "shapes"))
    images = build_features(shapes, image_size=16)
    assert images.image_train.shape == (48, 256) and images.image_shape == (1, 16, 16)
    batch = next(iterate_batches(images, 8, split="test"))
    assert tuple(batch["image"].shape) == (8, 1, 16, 16)
    assert 0.0 <= float(batch["image"].min()) and float(batch["image"].max()) <= 1.0


def test_rare_classes_and_single_class_folds() -> None:
    strata = np.array([0] * 20 + [1] * 2 + [2] * 1)
    folds = make_folds(len(strata), 5, 0, strata)
    assert len(folds) == 5 and sorted(np.concatenate([v for _, v in folds]).tolist()) == list(range(23))
    spec = TargetSpec("y", "binary", [0, 1])
    X = np.random.default_rng(0).normal(size=(30, 3))
    for model in (LinearModel(spec), LightGBMModel(spec, ModelOptions(light=True))):
        proba = model.fit(X, np.zeros(30, dtype=int)).predict_proba(X)
        assert proba.shape == (30, 2) and np.allclose(proba[:, 0], 1.0)
    multi = TargetSpec("y", "multiclass", ["a", "b", "c"])
    proba = LinearModel(multi).fit(X, np.array([0, 2] * 15)).predict_proba(X)
    assert proba.shape == (30, 3) and np.allclose(proba[:, 1], 0.0)
    assert math.isclose(float(proba.sum(axis=1).mean()), 1.0)


def test_maps_only_workspace_loads(titanic: Path, tmp_path: Path) -> None:
    """The maps meta check probes a DataLoader before the target/format/metric stages exist."""
    setup = tmp_path / "early" / "setup"
    setup.mkdir(parents=True)
    for name in ("train_tab_input_map.csv", "test_tab_input_map.csv"):
        (setup / name).write_bytes((titanic / "setup" / name).read_bytes())
    artifacts = SetupArtifacts.load(tmp_path / "early")
    features = build_features(artifacts)
    assert features.n_train == 713 and features.n_test == 178
    assert next(iterate_batches(features, 16))["tab"].shape[0] == 16
    with pytest.raises(FileNotFoundError, match="target_info"):
        artifacts.require_solvable()
    with pytest.raises(FileNotFoundError, match="code_metric.py"):
        artifacts.metric


def test_load_setup_module(tmp_path: Path) -> None:
    path = tmp_path / "code_metric.py"
    path.write_text(textwrap.dedent("""
        HIGHER_IS_BETTER = False
        def score(y_true, y_pred):
            return 0.5
    """))
    module = load_setup_module(path, "agentk_test_metric")
    assert module.HIGHER_IS_BETTER is False and module.score(None, None) == 0.5
    with pytest.raises(FileNotFoundError):
        load_setup_module(tmp_path / "missing.py", "agentk_missing")
