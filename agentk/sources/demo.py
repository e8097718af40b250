"""The embedded default competition: a small Kaggle-style binary task built from scikit-learn's
bundled Breast Cancer Wisconsin data, so `agentk demo` works offline with nothing downloaded.

The labels are the strings "malignant"/"benign" (not 0/1) so that label handling is exercised.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from agentk.core.errors import SourceError
from agentk.sources import common

DEMO_ID = "breast-cancer-diagnosis"
ID_COLUMN = "patient_id"
TARGET = "diagnosis"
TEST_FRACTION = 0.25
SEED = 0
# Bump when the generated files change, so older demo folders are rebuilt.
DEMO_VERSION = "demo-1"

DESCRIPTION = """# Breast Cancer Diagnosis

## Overview
Fine-needle aspirates of breast masses were digitised, and the cell nuclei in each image were
measured. Predict whether each mass is **malignant** or **benign** from those measurements.

## Evaluation
Submissions are evaluated on **accuracy**: the fraction of test patients whose diagnosis is
predicted correctly.

## Submission format
For every `patient_id` in the test set, predict the `diagnosis` (`malignant` or `benign`).
The file should contain a header and have the following format:

```
patient_id,diagnosis
1001,benign
1002,malignant
etc.
```

## Data
- **train.csv**: the training patients: `patient_id`, {n_features} numeric features and the
  `diagnosis` label.
- **test.csv**: the test patients: `patient_id` and the same features, without `diagnosis`.
- **sample_submission.csv**: a submission in the correct format (every test patient predicted benign).

For each of ten nucleus characteristics (radius, texture, perimeter, area, smoothness,
compactness, concavity, concave points, symmetry, fractal dimension) there are three features:
the `mean_`, the `error_` (standard error) and the `worst_` (mean of the three largest values).
"""

TOML = f"""# Grading facts for the demo competition. Only the grader reads this file.
[competition]
id = "{DEMO_ID}"
title = "Breast Cancer Diagnosis"
input_modalities = ["tabular"]
task_type = "binary"

[grading]
metric = "accuracy"
higher_is_better = true
id_column = "{ID_COLUMN}"
target_columns = ["{TARGET}"]
answers = "private/answers.csv"
"""


def make_demo_competition(out_dir: Path) -> Path:
    """Write the demo competition (local layout) into out_dir and return it; a complete folder
    from an earlier call is left as it is."""
    out_dir = Path(out_dir)
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / common.MARKER_NAME).is_file():
        # Rebuilding wipes the folder: never do that to one we did not write.
        raise SourceError(f"{out_dir} exists and is not a demo competition folder; choose another")
    common.build_atomically(out_dir, DEMO_VERSION, _write_demo)
    return out_dir


def _write_demo(out: Path) -> None:
    train, test = _demo_frames()
    data, private = out / "data", out / "private"
    data.mkdir()
    private.mkdir()
    common.write_csv_exact(train, data / "train.csv")
    common.write_csv_exact(test.drop(columns=[TARGET]), data / "test.csv")
    sample = pd.DataFrame({ID_COLUMN: test[ID_COLUMN], TARGET: "benign"})
    common.write_csv_exact(sample, data / "sample_submission.csv")
    common.write_csv_exact(test[[ID_COLUMN, TARGET]], private / "answers.csv")
    n_features = train.shape[1] - 2
    (out / common.DESCRIPTION_NAME).write_text(DESCRIPTION.format(n_features=n_features))
    (out / "competition.toml").write_text(TOML)


def _demo_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    bunch = load_breast_cancer(as_frame=True)
    features = bunch.data.rename(columns=_snake_case)
    frame = pd.concat(
        [
            pd.Series(range(1001, 1001 + len(features)), name=ID_COLUMN),
            features,
            bunch.target.map(lambda k: str(bunch.target_names[k])).rename(TARGET),
        ],
        axis=1,
    )
    train, test = train_test_split(frame, test_size=TEST_FRACTION, random_state=SEED, stratify=frame[TARGET])
    return train.sort_values(ID_COLUMN), test.sort_values(ID_COLUMN)


def _snake_case(column: str) -> str:
    """'mean radius' -> 'mean_radius'; 'radius error' -> 'error_radius' so each feature family
    reads as a prefix, like the Kaggle copies of this data set."""
    words = column.split()
    if words[-1] == "error":
        words = ["error", *words[:-1]]
    return "_".join(words)
