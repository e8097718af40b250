"""Labelled windows inside long recordings (BirdCLEF's layout): the sample's row ids found to be
windows of the test soundscapes, training clips labelled by a table or by their folders and cut
into windows, log-mel features per window, and a run end to end that beats a constant."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.sound_windows import clip_windows, sample_windows, split_window_id, window_bounds
from audio_competition import tone, write_clip
from setup_pipeline.expert.inspect import inspect_competition
from solve_pipeline.sound.audio_features import BAND_STATS, MEL_BANDS, audio_blocks, band_centres, feature_names
from test_end_to_end import Run, assert_solved, run_cli
from window_competition import RATE, SPECIES, make_window_competition

# ---- the convention ---------------------------------------------------------------------------


def test_window_ids_and_bounds() -> None:
    assert split_window_id(" soundscape_29201_15 ") == ("soundscape_29201", 15)
    assert split_window_id("2782_SSW_5") == ("2782_SSW", 5) and split_window_id("soundscape") is None
    assert window_bounds(15, 5, "end") == (10.0, 15.0) and window_bounds(15, 5, "start") == (15.0, 20.0)
    assert clip_windows(3.2, 5) == [(0, 5)]  # shorter than a window: one, read as far as it goes
    assert clip_windows(12.0, 5) == [(0, 5), (5, 10)]
    assert clip_windows(61.0, 5) == [(0, 5), (25, 30), (55, 60)]  # at most three, spread from the start


def test_sample_windows_find_each_recording_by_its_stem_or_a_prefix(tmp_path: Path) -> None:
    paths = [tmp_path / "soundscape_7.ogg", tmp_path / "2782_SSW_20170701.ogg"]
    rows = sample_windows(["soundscape_7_10", "2782_SSW_5"], paths, 5, "end")
    assert rows["path"].tolist() == paths and rows[["start_s", "end_s"]].to_numpy().tolist() == [[5, 10], [0, 5]]
    with pytest.raises(ValueError, match="not windows"):
        sample_windows(["soundscape_8_5"], paths, 5, "end")


# ---- perception ---------------------------------------------------------------------------------


def test_birdclef_layout_is_read_as_windows(tmp_path: Path) -> None:
    root = make_window_competition(tmp_path / "birds", per_species=2, soundscapes=2, seconds=30)
    facts = inspect_competition(root)
    shape = facts.windows
    assert shape is not None and shape.describe() == "windows: 2 recordings, 5-second windows, 4 classes"
    assert (shape.test_dir, shape.numbering, shape.n_rows) == ("data/test_soundscapes", "end", 12)
    assert (shape.train_table, shape.file_column, shape.label_column) == ("data/train_metadata.csv", "filename",
                                                                          "primary_label")
    assert shape.train_dir == "data/train_audio" and shape.n_train_clips == 8
    assert facts.submission_format == "per_class_proba" and facts.metric == "auc" and not facts.assumptions
    assert facts.submission_columns == ["row_id", *SPECIES] and facts.targets[0].column == "primary_label"
    assert facts.input_modalities == ["audio"]
    assert any(n.startswith("windows: 2 recordings, 5-second windows, 4 classes:") for n in facts.notes)


def test_class_folders_and_start_seconds_without_a_table(tmp_path: Path) -> None:
    """No metadata: each clip's folder is its class; row ids carry the window's start second."""
    root = make_window_competition(tmp_path / "birds", per_species=2, soundscapes=2, seconds=30, metadata=False)
    sample = pd.read_csv(root / "data" / "sample_submission.csv")
    recording, end = sample["row_id"].str.rsplit("_", n=1).str[0], sample["row_id"].str.rsplit("_", n=1).str[1]
    sample.assign(row_id=recording + "_" + (end.astype(int) - 5).astype(str)).to_csv(
        root / "data" / "sample_submission.csv", index=False)
    facts = inspect_competition(root)
    assert facts.windows is not None and facts.windows.numbering == "start" and facts.windows.train_table is None
    assert facts.windows.trained_classes == list(SPECIES) and facts.targets[0].column == "label"


def test_ids_whose_count_disagrees_with_the_durations_are_not_windows(tmp_path: Path) -> None:
    root = make_window_competition(tmp_path / "birds", per_species=2, soundscapes=2, seconds=30)
    sample = pd.read_csv(root / "data" / "sample_submission.csv")
    name = sample["row_id"].str.rsplit("_", n=1).str[0]
    longer = pd.concat([sample.assign(row_id=name + "_" + str(5 * k)) for k in range(1, 14)]).drop_duplicates("row_id")
    longer.to_csv(root / "data" / "sample_submission.csv", index=False)  # 65 s of windows in 30 s recordings
    notes: list[str] = []
    from setup_pipeline.perception.catalogue import build_catalogue
    from setup_pipeline.perception.windows import find_windows

    catalogue = build_catalogue(root)
    assert find_windows(root, catalogue.audio, catalogue.tables, notes) is None
    assert any("not read as windows" in n for n in notes)


# ---- features per window ----------------------------------------------------------------------


def _band_means(row: np.ndarray) -> np.ndarray:
    return row[: MEL_BANDS * len(BAND_STATS)].reshape(MEL_BANDS, len(BAND_STATS))[:, BAND_STATS.index("mean")]


def test_each_window_is_featurised_on_its_own_seconds(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    quiet = rng.normal(0, 0.01, RATE * 5)
    recording = np.concatenate([0.5 * tone(RATE, 5, 500) + quiet, quiet, 0.5 * tone(RATE, 5, 3000) + quiet])
    write_clip(tmp_path / "long.ogg", recording, RATE)
    write_clip(tmp_path / "short.wav", 0.5 * tone(RATE, 2, 500), RATE)
    test = pd.DataFrame({"audio_path": ["long.ogg"] * 3, "start_s": [0.0, 5.0, 10.0], "end_s": [5.0, 10.0, 15.0]},
                        index=["long_5", "long_10", "long_15"])
    train = pd.DataFrame({"audio_path": ["short.wav"], "start_s": [0.0], "end_s": [5.0]}, index=["clip0_5"])
    blocks = audio_blocks(train, test, tmp_path, cache_dir=tmp_path / "cache")
    assert blocks.test is not None and blocks.train is not None and np.isfinite(blocks.test).all()
    centres = band_centres(RATE)
    low, high = (int(np.argmin(np.abs(centres - hz))) for hz in (500, 3000))
    assert int(np.argmax(_band_means(blocks.test[0]))) == low and int(np.argmax(_band_means(blocks.test[2]))) == high
    rms = feature_names().index("aud_rms_mean")
    assert blocks.test[1, rms] < 0.1 * blocks.test[0, rms]  # the quiet middle window
    duration = feature_names().index("aud_duration_s")
    assert blocks.train[0, duration] == 5.0 and np.allclose(blocks.test[:, duration], 5.0)  # a window's length
    assert "4 windows of 2 recordings" in (blocks.note or "")


# ---- end to end -------------------------------------------------------------------------------

BUDGET_S = 15


@pytest.mark.integration
def test_windows_of_soundscapes_end_to_end(tmp_path: Path) -> None:
    """Six clips per species, four 40-second soundscapes: a probability per species and window,
    in the sample's rows, ranking the windows where each species sings above the rest."""
    root = make_window_competition(tmp_path / "birds")
    proc = run_cli("run", str(root), "--workspace-root", str(tmp_path / "ws"), "--time-budget", str(BUDGET_S),
                   "--json", cwd=tmp_path)
    result = assert_solved(Run(root, tmp_path, proc))  # valid, every stage passed, AUC >= constant + 0.1
    assert result["test_metric"] == "auc"
    workspace = next((tmp_path / "ws").iterdir())
    submission = pd.read_csv(workspace / "submissions" / "submission.csv")
    sample = pd.read_csv(root / "data" / "sample_submission.csv")
    assert list(submission.columns) == list(sample.columns) and submission["row_id"].tolist() == sample["row_id"].tolist()
    assert submission[list(SPECIES)].stack().between(0, 1).all()
    plan = (workspace / "setup" / "plan.json").read_text(encoding="utf-8")
    assert "windows: 4 recordings, 5-second windows, 4 classes" in plan
    events = (workspace / "logs" / "events.jsonl").read_text(encoding="utf-8")
    assert "windows of 28 recordings" in events
    shutil.rmtree(workspace / "solve" / "cache", ignore_errors=True)


# ---- the training windows a budget affords --------------------------------------------------


def test_windows_are_kept_balanced_over_classes_first_windows_first() -> None:
    from solve_pipeline.inputs.audio_windows import balanced

    # Class 0: three clips of three windows; class 1: one clip of two windows.
    ids = [f"clip{c}_{5 * (w + 1)}" for c in range(3) for w in range(3)] + ["clip3_5", "clip3_10"]
    classes = np.array([0] * 9 + [1] * 2)
    kept = balanced(ids, classes, 5, np.random.default_rng(0))
    assert kept == sorted(kept, key=ids.index) and len(kept) == 5
    assert {"clip3_5", "clip3_10"} <= set(kept)  # the rare class keeps all it has
    assert {"clip0_5", "clip1_5", "clip2_5"} == set(kept) - {"clip3_5", "clip3_10"}  # each clip's first window


def test_a_small_budget_reads_fewer_training_windows(tmp_path: Path) -> None:
    from agentk.core.predictions import TargetSpec
    from solve_pipeline.inputs.audio_windows import MIN_PER_CLASS, affordable_windows
    from solve_pipeline.base.setup_modules import SetupArtifacts

    rng = np.random.default_rng(1)
    write_clip(tmp_path / "setup" / "long.wav", rng.normal(0, 0.1, RATE * 30), RATE)
    rows = [(f"clip{c}_{5 * (w + 1)}", "long.wav", 5.0 * w, 5.0 * (w + 1)) for c in range(10) for w in range(3)]
    train = pd.DataFrame(rows, columns=["id", "audio_path", "start_s", "end_s"])
    test = train.head(2).assign(id=["long_5", "long_10"])
    labels = np.arange(30) // 15  # two classes
    artifacts = SetupArtifacts(workspace=tmp_path, setup_dir=tmp_path / "setup", train_maps={"aud": train},
                               test_maps={"aud": test}, target_map=None,
                               target_map_transformed=pd.DataFrame({"id": train["id"], "label": labels}),
                               targets=[TargetSpec("label", "multiclass", ["a", "b"])], target_info={})
    kept, note = affordable_windows(artifacts, train["id"].tolist(), 1e-3, seed=0)
    assert len(kept) == 2 * MIN_PER_CLASS and note is not None and f"{len(kept)} of 30 training windows" in note
    assert sorted(set(labels[[train["id"].tolist().index(i) for i in kept]])) == [0, 1]
    assert affordable_windows(artifacts, train["id"].tolist(), 1e4, seed=0) == (train["id"].tolist(), None)
    # Windows read before (the cache holds them) cost nothing: all are kept on the smallest budget.
    audio_blocks(train.set_index("id"), test.set_index("id"), artifacts.setup_dir, cache_dir=tmp_path / "solve" / "cache")
    assert affordable_windows(artifacts, train["id"].tolist(), 1e-3, seed=0) == (train["id"].tolist(), None)
    plain = train.drop(columns=["start_s", "end_s"])  # clips, not windows: nothing is left out
    artifacts.train_maps["aud"] = plain
    assert affordable_windows(artifacts, plain["id"].tolist(), 1e-3, seed=0)[1] is None


def test_a_table_of_labelled_spans_of_long_training_recordings(tmp_path: Path) -> None:
    """Training recordings labelled span by span (`recording`, `t_start`, `t_end`, `bird`): each span
    gives windows inside it (a short one, a window centred on it), named by the recording's stem."""
    from agentk.core.readers import read_table
    from agentk.core.sound_windows import find_sound, labelled_windows, sound_index, table_spans
    from window_competition import make_span_competition

    root = make_span_competition(tmp_path / "spans")
    facts = inspect_competition(root)
    shape = facts.windows
    assert shape is not None and (shape.train_table, shape.file_column, shape.label_column) == (
        "data/train_labels.csv", "recording", "bird")
    assert (shape.start_column, shape.end_column) == ("t_start", "t_end") and shape.n_train_clips == 3
    assert shape.trained_classes == list(SPECIES) and shape.train_dir == "data/train_soundscapes"
    table = read_table(root / shape.train_table)
    spans = table_spans(table, shape.start_column, shape.end_column, shape.window_s, shape.numbering)
    index = sound_index((root / shape.train_dir).iterdir())
    rows = labelled_windows([(find_sound(v, index), label, span) for v, label, span in
                             zip(table["recording"], table["bird"], spans)], shape.window_s)
    assert rows["id"].is_unique and set(rows["label"]) == set(SPECIES)
    assert np.allclose(rows["end_s"] - rows["start_s"], 5.0)
    for (start, end), row in zip(spans, table.itertuples()):
        mine = rows[(rows["path"] == index[row.recording]) & (rows["label"] == row.bird)]
        centre = (start + end) / 2
        # Every span is covered: its centre lies in one of the windows of its recording and label.
        assert ((mine["start_s"] <= centre) & (centre <= mine["end_s"])).any(), (row, mine)
    # A table of one row per clip (coordinates, ratings) names no spans.
    plain = make_window_competition(tmp_path / "clips", per_species=2, soundscapes=1, seconds=20)
    clips = inspect_competition(plain).windows
    assert clips is not None and (clips.start_column, clips.end_column) == (None, None)
