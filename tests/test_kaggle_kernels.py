"""Code competitions against the fake Kaggle, through the official client: a predictor uploaded as
a private dataset (with a wheel the kernel installs offline), a private script kernel with the
internet off that really runs on a test file the run never saw, its output submitted and scored;
a kernel that fails (one line naming the predictor's error) and one that outlasts the wait.

These tests use a prepared export (a hand-written predict.py, the shape `agentk export` writes);
a real `agentk run titanic --submit` on titanic made a code competition is in test_kaggle_run.py
(it resumes that module's solved workspace)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from agentk.kaggle import KaggleClient, RetryPolicy
from agentk.kaggle.kernel_bundle import KernelNames, dataset_folder, kernel_folder, pip_wheels
from agentk.kaggle.kernels import (
    KernelFailed,
    KernelTimedOut,
    kernel_output,
    push_kernel,
    submit_kernel,
    upload_dataset,
    wait_dataset,
    wait_kernel,
)

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle

# The prepared predictor: a women-survive rule from a package the image lacks (agentk-probe).
PREDICT = '''import csv, sys
from pathlib import Path
test = Path(sys.argv[1]) / "test.csv"
if not test.is_file():
    sys.exit(f"error: {test.parent} holds no test.csv")
import agentk_probe
with open(test) as f, open(sys.argv[2], "w", newline="") as out:
    rows = csv.DictReader(f)
    w = csv.writer(out)
    w.writerow(["PassengerId", "Survived"])
    for row in rows:
        w.writerow([row["PassengerId"], agentk_probe.survived(row)])
'''


def _wheel(folder: Path) -> Path:
    """A real pure-Python wheel of agentk-probe 1.0 (what pip installs from a wheelhouse)."""
    files = {"agentk_probe/__init__.py": b"def survived(row):\n    return int(row['Sex'] == 'female')\n",
             "agentk_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: agentk-probe\nVersion: 1.0\n",
             "agentk_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
              for name, data in files.items()] + ["agentk_probe-1.0.dist-info/RECORD,,"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "agentk_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("agentk_probe-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return folder


def _export(root: Path, script: str = PREDICT) -> Path:
    """A folder shaped as `agentk export` writes it, with a `lib/` folder (it travels zipped)."""
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "note.txt").write_text("the predictor's own modules\n")
    (root / "predict.py").write_text(script)
    (root / "requirements.txt").write_text("# Python 3.11\nagentk-probe==1.0\n")
    (root / "export.json").write_text(json.dumps({"competition": "titanic", "data_dir": "data"}))
    return root


def _client() -> KaggleClient:
    return KaggleClient(retry=RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05))


def _push(client: KaggleClient, tmp_path: Path, script: str = PREDICT):
    names = KernelNames("agentk-test-user", "titanic")
    missing = dataset_folder(_export(tmp_path / "export", script), tmp_path / "dataset", names,
                             pip_wheels(_wheel(tmp_path / "wheelhouse")))
    assert missing == []
    assert upload_dataset(client, tmp_path / "dataset", "first") == names.dataset_ref
    wait_dataset(client, names.dataset_ref, timeout_s=5, interval_s=0.01)
    return names, push_kernel(client, kernel_folder(tmp_path / "kernel", names))


def test_kernel_runs_the_uploaded_predictor_on_unseen_rows_and_its_output_is_scored(fake_kaggle, tmp_path: Path) -> None:
    client = _client()
    names, kernel = _push(client, tmp_path)
    assert (kernel.ref, kernel.version) == (names.kernel_ref, 1)
    sent = fake_kaggle.kernels.runs[0].meta
    assert sent["isPrivate"] and not sent["enableInternet"] and sent["kernelType"] == "script"
    assert sent["competitionDataSources"] == ["titanic"] and sent["datasetDataSources"] == [names.dataset_ref]
    assert fake_kaggle.kernels.dataset_private[names.dataset_ref]
    # The folder went up as an archive and Kaggle unpacked it; the wheel went along.
    stored = fake_kaggle.kernels.datasets[names.dataset_ref][-1]
    assert "lib/note.txt" in stored and "wheels/agentk_probe-1.0-py3-none-any.whl" in stored

    wait_kernel(client, kernel, timeout_s=120, interval_s=0.05)
    output = kernel_output(client, kernel.ref, tmp_path / "output")
    assert [p.name for p in output.files] == ["submission.csv"]
    assert "installing from the dataset's wheels: agentk-probe==1.0" in output.log
    written = pd.read_csv(output.files[0], dtype=str)
    # The rerun's test file is not the one the competition lists: its rows come in another order.
    public = pd.read_csv(io.BytesIO(zipfile.ZipFile(io.BytesIO(fake_kaggle.competition.archive)).read("test.csv")), dtype=str)
    assert sorted(written["PassengerId"]) == sorted(public["PassengerId"])
    assert written["PassengerId"].tolist() != public["PassengerId"].tolist()

    record = submit_kernel(client, "titanic", kernel, "submission.csv", "agentk: rule")
    scored = client.poll("titanic", record.ref, timeout_s=5, interval_s=0.01)
    assert scored.status == "complete" and 0.6 < scored.public_score < 1.0
    assert fake_kaggle.submissions[0].content == output.files[0].read_bytes()

    # A second submission is a new version of the dataset and of the kernel.
    names, again = _push(client, tmp_path / "again")
    assert again.version == 2 and len(fake_kaggle.kernels.datasets[names.dataset_ref]) == 2


def test_a_failing_kernel_is_one_line_with_the_predictors_error(fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.kernels.hidden_files = {"test.csv"}  # the rerun's test file is named otherwise
    client = _client()
    _, kernel = _push(client, tmp_path)
    with pytest.raises(KernelFailed) as failed:
        wait_kernel(client, kernel, timeout_s=120, interval_s=0.05)
    message = str(failed.value)
    assert "\n" not in message and "holds no test.csv" in message and "exit code" in message
    assert not fake_kaggle.submissions


def test_a_kernel_that_outlasts_the_wait_times_out(fake_kaggle, tmp_path: Path) -> None:
    fake_kaggle.kernels.start_delay_s = 3.0  # still queued when the wait ends
    client = _client()
    _, kernel = _push(client, tmp_path)
    with pytest.raises(KernelTimedOut, match=r"did not finish within 0.3 s .*it may still finish"):
        wait_kernel(client, kernel, timeout_s=0.3, interval_s=0.05)
    assert not fake_kaggle.submissions


def test_a_kernel_owned_by_another_account_is_refused_in_one_line(fake_kaggle, tmp_path: Path) -> None:
    from agentk.kaggle import KaggleError

    client = _client()
    names = KernelNames("someone-else", "titanic")
    with pytest.raises(KaggleError, match="pushing the kernel someone-else/agentk-titanic"):
        push_kernel(client, kernel_folder(tmp_path / "kernel", names))


def test_kernel_agreement_compares_rows_by_id(tmp_path: Path) -> None:
    from agentk.publish_code import kernel_agreement

    local = tmp_path / "local.csv"
    pd.DataFrame({"id": ["a", "b", "c"], "p": ["0.25", "0.5", "1"]}).to_csv(local, index=False)
    same = tmp_path / "same.csv"
    pd.DataFrame({"id": ["c", "a", "b"], "p": ["1.0", "0.2500000001", "0.5"]}).to_csv(same, index=False)
    assert kernel_agreement(local, same) == {"rows": 3, "differing_rows": 0}
    other = tmp_path / "other.csv"
    pd.DataFrame({"id": ["c", "a", "b"], "p": ["1.0", "0.75", "0.5"]}).to_csv(other, index=False)
    assert kernel_agreement(local, other) == {"rows": 3, "differing_rows": 1}
    hidden = tmp_path / "hidden.csv"
    pd.DataFrame({"id": ["x", "y"], "p": ["1", "0"]}).to_csv(hidden, index=False)
    assert kernel_agreement(local, hidden) is None
