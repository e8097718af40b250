"""Image competitions whose train labels are in the file names (`cat.0.jpg`, `dog_17.png`), laid out
as MLE-bench lays dogs-vs-cats out: train.zip and test.zip, a sample of `id,label` probabilities, a
page saying which class the probability is of. Images are rendered here with PIL; the run is the real
CLI in a subprocess, graded by `agentk grade` against answers the agent never sees."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageDraw

from setup_pipeline.expert.facts import ExpertDeclined
from setup_pipeline.expert.inspect import inspect_competition
from setup_pipeline.expert.name_labels import find_name_labels
from setup_pipeline.expert.targets import page_positive

AGENTK = [sys.executable, "-m", "agentk.cli"]
LOG_LOSS_OF_A_HALF = float(np.log(2))  # the sample's constant 0.5, the score to beat

DESCRIPTION = """# Pets

## Overview
Tell the animals in the pictures apart.

## Evaluation
Submissions are scored on the log loss between the predicted probabilities and the true labels.

For each image in the test set, you should predict a probability that the image is a {positive} (1 = {positive}, 0 = {negative}).

## Submission File
```
id,label
1,0.5
2,0.5
etc.
```

## Data
The train folder holds images named by their animal, e.g. `{negative}.0.jpg`; the test folder holds numbered images.
"""

TOML = """[competition]
id = "pets-by-name"
title = "Pets"
input_modalities = ["image"]
task_type = "binary"

[grading]
metric = "logloss"
higher_is_better = false
id_column = "id"
target_columns = ["label"]
answers = "private/answers.csv"
"""


def _draw(kind: int, rng: np.random.Generator, size: int = 64) -> Image.Image:
    """Kind 0: a bright circle on noise; 1: a dark square; 2: horizontal stripes. Sizes and places vary."""
    base = rng.normal(120, 25, (size, size, 3)).clip(0, 255).astype(np.uint8)
    img = Image.fromarray(base)
    draw = ImageDraw.Draw(img)
    r = int(rng.integers(12, 22))
    cx, cy = (int(v) for v in rng.integers(r, size - r, 2))
    if kind == 0:
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=(235, 235, 200))
    elif kind == 1:
        draw.rectangle((cx - r, cy - r, cx + r, cy + r), fill=(20, 20, 40))
    else:
        for y in range(0, size, 8):
            draw.rectangle((0, y, size, y + 3), fill=(200, 40, 40))
    return img


def _images(folder: Path, names: list[str], kinds: list[int], seed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name, kind in zip(names, kinds):
        _draw(kind, rng).save(folder / name)


def _zip(folder: Path, archive: Path, at_root: bool) -> None:
    """`archive` holding `<folder name>/<file>`, as Kaggle's train.zip holds train/cat.0.jpg, or the
    files `at_root`, as MLE-bench's compress() writes them."""
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.iterdir()):
            zf.write(path, path.name if at_root else f"{folder.name}/{path.name}")


def make_pets(out: Path, classes: tuple[str, ...] = ("cat", "dog"), per_class: int = 20, n_test: int = 30,
              sep: str = ".", ext: str = ".jpg", zipped: bool = True, positive: str | None = None,
              mlebench: bool = False, test_name: str = "{i}") -> Path:
    """A local competition: data/train(.zip) of `<class><sep><i><ext>`, data/test(.zip) of `<i><ext>`,
    a sample of `id,label` (binary) or one column per class, description.md, private/answers.csv.
    `mlebench`: as MLE-bench's prepare leaves it, the folders beside zips of their files."""
    data, private = out / "data", out / "private"
    private.mkdir(parents=True)
    train_kinds = [k for k in range(len(classes)) for _ in range(per_class)]
    train_names = [f"{classes[k]}{sep}{i}{ext}" for i, k in enumerate(train_kinds)]
    test_kinds = [int(k) for k in np.random.default_rng(7).integers(0, len(classes), n_test)]
    test_ids = [test_name.format(i=i + 1) for i in range(n_test)]
    staging = out / "staging" if zipped and not mlebench else data
    _images(staging / "train", train_names, train_kinds, seed=1)
    _images(staging / "test", [f"{i}{ext}" for i in test_ids], test_kinds, seed=2)
    if mlebench:
        for split in ("train", "test"):
            _zip(data / split, data / f"{split}.zip", at_root=True)
    elif zipped:
        data.mkdir()
        for split in ("train", "test"):
            _zip(staging / split, data / f"{split}.zip", at_root=False)
        for path in sorted(staging.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        staging.rmdir()
    if len(classes) == 2:
        positive = positive or classes[1]
        negative = next(c for c in classes if c != positive)
        pd.DataFrame({"id": test_ids, "label": 0.5}).to_csv(data / "sample_submission.csv", index=False)
        truth = [int(classes[k] == positive) for k in test_kinds]
        pd.DataFrame({"id": test_ids, "label": truth}).to_csv(private / "answers.csv", index=False)
        (out / "description.md").write_text(DESCRIPTION.format(positive=positive, negative=negative))
        (out / "competition.toml").write_text(TOML)
    else:
        sample = pd.DataFrame({"id": test_ids, **{c: 1 / len(classes) for c in classes}})
        sample.to_csv(data / "sample_submission.csv", index=False)
        (out / "description.md").write_text("# Shapes\n\n## Evaluation\nScored by multi-class log loss.\n")
    return out


def _raw(competition: Path, tmp: Path) -> Path:
    """The agent's view: description.md and data/, never private/ or competition.toml."""
    raw = tmp / "raw"
    raw.mkdir()
    (raw / "description.md").write_bytes((competition / "description.md").read_bytes())
    subprocess.run(["cp", "-r", str(competition / "data"), str(raw / "data")], check=True)
    return raw


# ---------------------------------------------------------------- recognising the layout


def test_dogs_vs_cats_layout_is_read_from_the_names(tmp_path: Path) -> None:
    """Zipped train/cat.0.jpg ... beside test/1.jpg ...; the page says the probability is of a cat,
    which sorts first, so only reading the page gets the class right."""
    raw = _raw(make_pets(tmp_path / "pets", positive="cat"), tmp_path)
    got = inspect_competition(raw)
    layout = got.image
    assert layout is not None and layout.kind == "name_labels"
    assert (layout.train_dir, layout.test_dir) == ("data/train_unpacked/train", "data/test_unpacked/test")
    assert (layout.n_train_images, layout.n_test_images) == (40, 30) and not layout.ids_include_extension
    assert got.submission_format == "per_target" and got.submission_columns == ["id", "label"]
    assert got.metric == "logloss" and got.targets[0].task == "binary"
    assert got.targets[0].classes == ["cat", "dog"] and got.targets[0].positive_class == "cat"
    assert "labels are the file-name prefixes before '.' under data/train_unpacked/train/: cat 20, dog 20" in got.notes
    assert not got.assumptions, got.assumptions


def test_mlebench_leaves_the_folders_beside_zips_of_their_files(tmp_path: Path) -> None:
    """train/ and train.zip (members at its root) both: either copy is read, never the test's."""
    raw = _raw(make_pets(tmp_path / "pets", mlebench=True), tmp_path)
    got = inspect_competition(raw)
    layout = got.image
    assert layout is not None and layout.kind == "name_labels"
    assert layout.train_dir in ("data/train", "data/train_unpacked") and layout.n_train_images == 40
    assert layout.test_dir in ("data/test", "data/test_unpacked") and layout.n_test_images == 30
    assert got.targets[0].positive_class == "dog" and not got.assumptions


def test_the_last_label_is_assumed_when_the_page_does_not_say(tmp_path: Path) -> None:
    competition = make_pets(tmp_path / "pets")
    (competition / "description.md").write_text("# Pets\n\n## Evaluation\nScored by log loss.\n")
    got = inspect_competition(_raw(competition, tmp_path))
    assert got.targets[0].positive_class == "dog"
    assert any("probability of 'dog'" in a for a in got.assumptions), got.assumptions


def test_many_classes_spelled_with_underscores_in_a_plain_folder(tmp_path: Path) -> None:
    """Multi-word labels (`red_stripes_3.png`), not zipped, one probability column per class."""
    classes = ("bright_circle", "dark_square", "red_stripes")
    raw = _raw(make_pets(tmp_path / "shapes", classes=classes, per_class=6, sep="_", ext=".png", zipped=False), tmp_path)
    got = inspect_competition(raw)
    layout = got.image
    assert layout is not None and layout.kind == "name_labels"
    assert (layout.train_dir, layout.test_dir) == ("data/train", "data/test")
    assert got.submission_format == "per_class_proba" and got.submission_columns == ["id", *classes]
    assert got.targets[0].classes == list(classes) and got.metric == "multiclass_logloss"


def test_dashes_and_a_label_column(tmp_path: Path) -> None:
    """`owl-3.png` beside `test-7.png`: one prefix shared by every test image is no label."""
    competition = make_pets(tmp_path / "pets", classes=("owl", "hen", "emu"), per_class=5, sep="-", ext=".png",
                            test_name="test-{i}")
    pd.DataFrame({"id": [f"test-{i + 1}" for i in range(30)], "label": "owl"}).to_csv(
        competition / "data" / "sample_submission.csv", index=False)
    (competition / "description.md").write_text("# Birds\n\n## Evaluation\nScored by accuracy.\n")
    got = inspect_competition(_raw(competition, tmp_path))
    assert got.image is not None and got.image.kind == "name_labels" and got.image.test_dir == "data/test_unpacked/test"
    assert got.targets[0].task == "multiclass" and got.targets[0].classes == ["emu", "hen", "owl"]


@pytest.mark.parametrize("train_name", ["{i}.jpg", "img_{i:04d}.jpg", "{i:x}-{k}.jpg"])
def test_ids_are_not_labels(tmp_path: Path, train_name: str) -> None:
    """Numbered names, one shared prefix, or a prefix unique to each image: no labels in the names."""
    data = tmp_path / "raw" / "data"
    _images(data / "train", [train_name.format(i=i + 100, k=i % 3) for i in range(40)], [i % 2 for i in range(40)], seed=1)
    _images(data / "test", [f"{i}.jpg" for i in range(10)], [0] * 10, seed=2)
    assert find_name_labels(sorted(data.rglob("*.jpg")), tmp_path / "raw") is None
    (tmp_path / "raw" / "description.md").write_text("# Pictures\n")
    pd.DataFrame({"id": range(10), "label": 0.5}).to_csv(data / "sample_submission.csv", index=False)
    with pytest.raises(ExpertDeclined, match="no training data"):
        inspect_competition(tmp_path / "raw")


def test_a_naming_scheme_shared_with_test_is_not_a_label(tmp_path: Path) -> None:
    """`IMG_1.jpg` and `DSC_2.jpg` in train and in test alike name cameras, not classes."""
    data = tmp_path / "data"
    names = [f"{('IMG', 'DSC')[i % 2]}_{i}.jpg" for i in range(40)]
    _images(data / "train", names, [0] * 40, seed=1)
    _images(data / "test", [f"{('IMG', 'DSC')[i % 2]}_{i + 100}.jpg" for i in range(10)], [0] * 10, seed=2)
    assert find_name_labels(sorted(data.rglob("*.jpg")), tmp_path) is None


def test_a_label_closing_the_name(tmp_path: Path) -> None:
    """`0412_cat.jpg` beside `77.jpg`: the label is the name's last part (its ids come first)."""
    data = tmp_path / "data"
    _images(data / "train", [f"{i * 7 + 400:04d}_{('cat', 'dog')[i % 2]}.jpg" for i in range(40)], [i % 2 for i in range(40)], seed=1)
    _images(data / "test", [f"{i}.jpg" for i in range(10)], [0] * 10, seed=2)
    found = find_name_labels(sorted(data.rglob("*.jpg")), tmp_path)
    assert found is not None and found.suffix and found.counts == {"cat": 20, "dog": 20}
    assert found.test_dir == data / "test" and found.label_of("0407_dog") == "dog"
    assert found.describe(tmp_path).startswith("labels are the file-name suffixes after the last '_' under data/train/")


def _recordings(days: tuple[str, ...], n: int, name: str) -> list[str]:
    """Names as hydrophone clips are named: `<day>_<time>_<offset>_` then `name` formatted with the
    clip's number `i` and a 0/1 label `k`."""
    return [f"{days[i % len(days)]}_{(i * 7919) % 86400:06d}_{i % 60:03d}s{i % 10}ms_{name.format(i=i, k=i % 3 % 2)}.aif"
            for i in range(n)]


@pytest.mark.parametrize("test_days", [("20090330",), ("20090330", "20090331")])
def test_a_number_closing_a_recording_name_is_its_label(tmp_path: Path, test_days: tuple[str, ...]) -> None:
    """`<day>_<time>_<offset>_TRAIN7_1.aif` beside `<day>_<time>_<offset>_Test7.aif`: the last field
    is the label, not the recording's day, though train's names split by day as well (into two
    days, each recurring) and the test names, of other days, too."""
    train = [tmp_path / "train" / name for name in _recordings(("20090328", "20090329"), 60, "TRAIN{i}_{k}")]
    test = [tmp_path / "test" / name for name in _recordings(test_days, 20, "Test{i}")]
    found = find_name_labels(train + test, tmp_path, {p.name for p in test})
    assert found is not None and found.suffix and found.separator == "_"
    assert found.counts == {"0": 40, "1": 20} and found.test_dir == tmp_path / "test"
    assert found.label_of(train[1].stem) == "1" and found.label_of(test[1].stem) != "1"


def test_a_count_after_a_lone_id_is_no_label(tmp_path: Path) -> None:
    """`a3f9_1`, `a3f9_2`: the second shot of a3f9, the same numbers under every id, not a class."""
    train = [tmp_path / "train" / f"{i // 3 + 4096:x}_{i % 3}.jpg" for i in range(60)]
    test = [tmp_path / "test" / f"{i}.jpg" for i in range(10)]
    assert find_name_labels(train + test, tmp_path) is None


@pytest.mark.parametrize("page,expected", [
    ("Predict a probability that the image is a dog (1 = dog, 0 = cat).", "dog"),
    ("Label: cat = 1, dog = 0.", "cat"),
    ("Submit the probability that the picture shows a Golden Retriever rather than a cat.", "golden_retriever"),
    ("Scored by log loss.", None),
])
def test_the_page_names_the_positive_class(page: str, expected: str | None) -> None:
    said = page_positive(page, ["cat", "dog", "golden_retriever"] if "Golden" in page else ["cat", "dog"])
    assert (said[0] if said else None) == expected


# ---------------------------------------------------------------- end to end


@pytest.mark.integration
def test_agentk_run_and_grade_end_to_end(tmp_path: Path) -> None:
    """The real CLI on the zipped layout; the page's positive class (cat) sorts first, so a wrong
    reading of it scores far worse than the sample's 0.5."""
    competition = make_pets(tmp_path / "pets", per_class=24, n_test=30, positive="cat")
    run = subprocess.run([*AGENTK, "run", str(competition), "--workspace-root", str(tmp_path / "ws"),
                          "--time-budget", "10", "--folds", "2", "--json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    workspace = tmp_path / "ws" / "pets-by-name"
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True, result
    assert all(stage["passed"] for stage in result["setup"].values()), result["setup"]
    submission = workspace / "submissions" / "submission.csv"
    written = pd.read_csv(submission, dtype={"id": str})
    assert list(written.columns) == ["id", "label"] and sorted(written["id"], key=int) == [str(i + 1) for i in range(30)]
    assert written["label"].between(0, 1).all()
    graded = subprocess.run([*AGENTK, "grade", str(competition), str(submission), "--json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert graded.returncode == 0, graded.stderr[-3000:]
    score = json.loads(graded.stdout)["score"]
    assert score <= 0.8 * LOG_LOSS_OF_A_HALF, (score, result.get("test_score"))
    assert not list(workspace.rglob("answers.csv")) and not list(workspace.rglob("competition.toml"))
