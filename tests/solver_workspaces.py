"""Hand-built setup workspaces from real competition data, and a solver runner, for solver tests.

Each workspace follows docs/architecture.md: input maps, target maps, target_info.json and the
three generated modules written as plain Python, exactly what a setup policy would leave behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, ImageDraw

from solve_pipeline.base.setup_modules import load_setup_module
from solve_pipeline.base.submission_check import validate_submission

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


def shapes_workspace(root: Path, n: int = 60, with_table: bool = False) -> Path:
    """Filled circles versus filled squares of varied size and position, drawn with Pillow; with
    `with_table`, a table beside them too (a noisy size and a colour name per picture)."""
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
    frame["size"] = rng.normal(10, 3, len(frame)).round(2)
    frame["colour"] = rng.choice(["red", "green", "blue"], len(frame))
    train, test = frame.iloc[:48], frame.iloc[48:]
    inputs = {"img": (train[["id", "path"]], test[["id", "path"]])}
    if with_table:
        inputs["tab"] = (train[["id", "size", "colour"]], test[["id", "size", "colour"]])
    return write_workspace(
        root, inputs=inputs,
        targets=train[["id", "shape"]], test_ids=test["id"].tolist(),
        spec={"column": "shape", "task": "binary", "classes": ["circle", "square"]}, id_name="id",
        metric=ACCURACY_METRIC, formatter=LABEL_FORMAT,
        sample=pd.DataFrame({"id": test["id"], "shape": "circle"}))


def run_solver(workspace: Path, *args: str) -> tuple[dict, list[dict]]:
    completed = subprocess.run(
        [PYTHON, "-m", "solve_pipeline.solver", str(workspace), *args],
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


def tweets_workspace(root: Path, n: int = 80) -> Path:
    """A few disaster tweets: text only, binary, small enough to fine-tune MiniLM in seconds."""
    raw = pd.read_csv(COMPETITIONS / "nlp-getting-started/data/train.csv").sample(n=n, random_state=0)
    raw["id"] = raw["id"].astype(str)
    train, test = split_rows(raw)
    sample = pd.DataFrame({"id": test["id"], "target": 0})
    return write_workspace(
        root, inputs={"txt": (train[["id", "text"]], test[["id", "text"]])},
        targets=train[["id", "target"]], test_ids=test["id"].tolist(),
        spec={"column": "target", "task": "binary", "classes": [0, 1]}, id_name="id",
        metric=ACCURACY_METRIC, formatter=LABEL_FORMAT, sample=sample)
