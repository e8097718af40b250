"""A model to take away, end to end as a user does it: a real `agentk run` on small copies of
shared competitions (a table of probabilities, a text of labels) and on made pictures, `agentk export`, then the exported `predict.py` run by a Python that
cannot import agentk (its packages only), outside the repository, on a test folder the run never
saw: the public test rows resampled and shuffled, ids kept. Its submission must be the one the
run wrote for those rows; `agentk predict` must write the same file from the workspace."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from picture_files import make_png_competition
from solve_pipeline.export.code_closure import OWN_PACKAGES

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"
REPO = Path(__file__).resolve().parents[1]
# An exportable predictor is all these runs need (no score is asserted): the pace-setter is one.
BUDGET_S = "8"
AUC_PAGE = """# Titanic, probabilities

## Evaluation
Submissions are evaluated on the area under the ROC curve (AUC) between the predicted probability
that a passenger survived and the observed target. For each PassengerId in test.csv, submit the
probability that the passenger survived.
"""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "agentk.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def _titanic_auc(root: Path) -> tuple[Path, str, str]:
    """Titanic's first rows, scored by AUC: the submission holds probabilities."""
    data = root / "data"
    data.mkdir(parents=True)
    train = pd.read_csv(SHARED / "titanic/data/train.csv", dtype=str, keep_default_na=False).iloc[:400]
    test = pd.read_csv(SHARED / "titanic/data/test.csv", dtype=str, keep_default_na=False).iloc[:150]
    train.to_csv(data / "train.csv", index=False)
    test.to_csv(data / "test.csv", index=False)
    pd.DataFrame({"PassengerId": test["PassengerId"], "Survived": 0.5}).to_csv(data / "sample_submission.csv", index=False)
    (root / "description.md").write_text(AUC_PAGE, encoding="utf-8")
    return root, "PassengerId", "sample_submission.csv"


def _tweets(root: Path) -> tuple[Path, str, str]:
    """Disaster tweets' first rows: a text column beside keyword and location."""
    data = root / "data"
    data.mkdir(parents=True)
    source = SHARED / "nlp-getting-started"
    pd.read_csv(source / "data/train.csv", dtype=str, keep_default_na=False).iloc[:500].to_csv(data / "train.csv", index=False)
    test = pd.read_csv(source / "data/test.csv", dtype=str, keep_default_na=False).iloc[:200]
    test.to_csv(data / "test.csv", index=False)
    pd.DataFrame({"id": test["id"], "target": 0}).to_csv(data / "sample_submission.csv", index=False)
    (root / "description.md").write_text((source / "description.md").read_text(encoding="utf-8"), encoding="utf-8")
    return root, "id", "sample_submission.csv"


def bare_python(root: Path) -> Path:
    """A venv whose only packages are this one's third-party ones: agentk's own packages (and an
    editable install's finder) are left out, so `import agentk` fails there."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    packages = root / "third-party"
    packages.mkdir()
    own = {*OWN_PACKAGES, "__editable__", "agentk-"}
    for folder in site.getsitepackages():
        for entry in Path(folder).iterdir():
            if any(entry.name.startswith(prefix) for prefix in own) or entry.suffix == ".pth":
                continue
            if not (packages / entry.name).exists():
                (packages / entry.name).symlink_to(entry)
    lib = next((root / "lib").glob("python3*")) / "site-packages"
    (lib / "third_party.pth").write_text(f"{packages}\n", encoding="utf-8")
    return root / "bin" / "python"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One bare venv for the module's tests: none of them writes to it."""
    return bare_python(tmp_path_factory.mktemp("bare") / "venv")


def _unseen_tests(workspace: Path, folder: Path, id_column: str, sample_name: str, target: str, seed: int) -> list[str]:
    """The run's test rows, a resample of them shuffled (ids kept), with a sample submission that
    follows them: a test folder in the competition's own layout that the run never saw."""
    test = pd.read_csv(workspace / "raw/data/test.csv", dtype=str, keep_default_na=False)
    picked = test.sample(n=int(len(test) * 0.6), random_state=seed)
    folder.mkdir()
    picked.to_csv(folder / "test.csv", index=False)
    pd.DataFrame({id_column: picked[id_column], target: 0}).to_csv(folder / sample_name, index=False)
    return picked[id_column].tolist()


# Probabilities (a table) and labels (a text). Labels spelled as words go through an export in the
# pictures' test below; the table families' replay on word labels is test_export_replay's (spooky).
@pytest.mark.parametrize("make,target,probabilities", [(_titanic_auc, "Survived", True),
                                                       (_tweets, "target", False)],
                         ids=["titanic-auc", "tweets"])
def test_exported_predictor_writes_the_runs_submission_for_unseen_rows(tmp_path: Path, bare: Path, make, target: str,
                                                                        probabilities: bool) -> None:
    competition, id_column, sample_name = make(tmp_path / "competition")
    ran = _cli("run", str(competition), "-w", str(tmp_path / "ws"), "--time-budget", BUDGET_S, "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
    workspace = tmp_path / "ws" / "competition"
    record = json.loads((workspace / "solve/predictor/predictor.json").read_text())
    assert record["exportable"] and record["check"]["max_abs_diff"] <= 1e-9, record

    out = tmp_path / "away"
    exported = _cli("export", str(workspace), str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    pins = (out / "requirements.txt").read_text().split()
    assert any(p.startswith("numpy==") for p in pins) and any(p.startswith("pandas==") for p in pins)
    # Nothing of the training data travels: no map, no raw file, no out-of-fold prediction.
    assert not [p for p in out.rglob("*.csv")], "an export holds no table"

    python = bare
    probe = subprocess.run([str(python), "-I", "-c", "import agentk"], capture_output=True, text=True, cwd=tmp_path)
    assert probe.returncode != 0 and "No module named 'agentk'" in probe.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ids = _unseen_tests(workspace, tmp_path / "unseen", id_column, sample_name, target, seed=3)
    written = tmp_path / "unseen.csv"
    predicted = subprocess.run([str(python), "-I", str(out / "predict.py"), str(tmp_path / "unseen"), str(written)],
                               capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert predicted.returncode == 0, predicted.stderr[-3000:]

    mine = pd.read_csv(written, dtype=str, keep_default_na=False)
    assert mine[id_column].tolist() == ids  # the sample's order, each id once
    runs = pd.read_csv(workspace / "submissions/submission.csv", dtype=str, keep_default_na=False).set_index(id_column)
    assert list(mine.columns) == [id_column, *runs.columns]
    theirs = runs.loc[ids, target]
    if probabilities:
        values = mine[target].astype(float).to_numpy()
        assert not np.isin(values, [0.0, 1.0]).all(), "an AUC submission holds probabilities"
        assert np.allclose(values, theirs.astype(float).to_numpy(), rtol=0, atol=1e-6)
    else:
        assert mine[target].tolist() == theirs.tolist()

    # The same folder from the workspace: the same submission.
    again = tmp_path / "again.csv"
    from_workspace = _cli("predict", str(workspace), str(tmp_path / "unseen"), "--out", str(again), cwd=tmp_path)
    assert from_workspace.returncode == 0, from_workspace.stderr
    if probabilities:  # the same probabilities; the last bit of a float may follow the BLAS's summation order
        a, b = pd.read_csv(again), pd.read_csv(written)
        assert a[id_column].tolist() == b[id_column].tolist()
        assert np.allclose(a[target].to_numpy(float), b[target].to_numpy(float), rtol=1e-12, atol=1e-15)
    else:
        assert again.read_bytes() == written.read_bytes()
    # A folder without the competition's files: one line naming the files it should hold.
    (tmp_path / "empty").mkdir()
    refused = _cli("predict", str(workspace), str(tmp_path / "empty"), "--out", str(tmp_path / "no.csv"), cwd=tmp_path)
    assert refused.returncode != 0 and "test.csv" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "no.csv").exists()


def test_export_refuses_a_folder_without_a_predictor_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "ws" / "solve").mkdir(parents=True)
    proc = _cli("export", str(tmp_path / "ws"), str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode != 0 and "holds no predictor" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_exported_predictor_embeds_unseen_pictures_as_the_run_did(tmp_path: Path, bare: Path) -> None:
    """Pictures whose class is their colour (grey pixel grids cannot tell them apart): the run's
    pretrained families embed them, and the export carries the network's weights. In a Python
    without agentk, on a folder of resampled, shuffled test pictures (ids kept, the train pictures
    gone), it writes the labels the run wrote for them."""
    competition = make_png_competition(tmp_path / "competition")
    # Embedding the 90 pictures takes the pretrained families' share of the budget: 45 s gives
    # them ~20 s on a loaded 2-core machine (20 s embedded a fifth of them, the pixels carried).
    ran = _cli("run", str(competition), "-w", str(tmp_path / "ws"), "--time-budget", "45", "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
    workspace = tmp_path / "ws" / "blob-png"
    record = json.loads((workspace / "solve/predictor/predictor.json").read_text())
    assert record["exportable"], record
    assert record["check"]["max_abs_diff"] <= record["check"]["tolerance"] <= 1e-4
    models = json.loads((workspace / "solve/solve_result.json").read_text())["models_per_target"]
    assert "pretrained" in json.dumps(models) or "blend" in json.dumps(models), models

    out = tmp_path / "away"
    exported = _cli("export", str(workspace), str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert any(p.startswith("torch==") for p in (out / "requirements.txt").read_text().split())
    assert not [p for p in out.rglob("*") if p.suffix in (".csv", ".png", ".pth")], "no data and no weight file"

    test = pd.read_csv(workspace / "raw/data/test.csv", dtype=str)
    picked = test.sample(n=int(len(test) * 0.6), random_state=5)
    unseen = tmp_path / "unseen"
    (unseen / "images").mkdir(parents=True)
    for image_id in picked["image_id"]:
        name = f"{image_id}.png"
        (unseen / "images" / name).write_bytes((workspace / "raw/data/images" / name).read_bytes())
    picked.to_csv(unseen / "test.csv", index=False)
    sample = pd.DataFrame({"image_id": picked["image_id"], "label": "left"})
    sample.to_csv(unseen / "sample_submission.csv", index=False)

    python = bare
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    written = tmp_path / "unseen.csv"
    began = time.monotonic()
    predicted = subprocess.run([str(python), "-I", str(out / "predict.py"), str(unseen), str(written)],
                               capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"export {size / 1e6:.1f} MB; predict.py on {len(picked)} pictures {time.monotonic() - began:.1f} s")  # -s
    mine = pd.read_csv(written, dtype=str)
    assert mine["image_id"].tolist() == picked["image_id"].tolist()
    runs = pd.read_csv(workspace / "submissions/submission.csv", dtype=str).set_index("image_id")
    assert mine["label"].tolist() == runs.loc[picked["image_id"], "label"].tolist()
