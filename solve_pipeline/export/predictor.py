"""The predictor a solve leaves beside its submission, and the code that runs it on unseen rows.

`Predictor` holds what the submission's test predictions were made by: per target the recipe
(replay.py: fold models, fitted maps, calibration, bag, blend) and the decoder, and how the tabular
block was made from the setup's test map (features.TableRecipe) and how the image map's pictures are
read (image_features.PictureFiles). `predict_folder` replays the
run's own test path on a folder of test files laid out as the competition's data folder: the
setup's generated test-map code writes the map, the map is read as the solver reads it, encoded,
predicted, decoded, inverted by the setup's target transform and formatted by its submission code,
each step by the very code the run used (`agentk export` copies it beside this module).

It runs where agentk may not be installed (an export's `lib/` holds the modules it imports), so it
imports only agentk.core and solve_pipeline modules that travel there.
"""

from __future__ import annotations

import json
import os
import pickle
import runpy
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Sequence

import numpy as np
import pandas as pd

from agentk.core.artifacts import MODULE_FILES, SetupLayout
from agentk.core.maps import read_map
from agentk.core.predictor_layout import ExportLayout
from agentk.core.predictions import TargetSpec
from solve_pipeline.base.cv import Predictions
from solve_pipeline.base.decoding import Decoder
from solve_pipeline.base.replay import TargetReplay
from solve_pipeline.inputs.features import TableRecipe, aligned, joined_texts, tab_matrix
from solve_pipeline.phases.outputs import formatted_submission
from solve_pipeline.base.setup_modules import load_setup_module
from solve_pipeline.base.table_inputs import Rows
from solve_pipeline.images.image_features import PictureFiles
from solve_pipeline.texts.text_features import TextRecipe


class PredictError(Exception):
    """The test folder cannot be predicted; the message says why, in one line."""


@dataclass
class Predictor:
    """The recipe of a submission's test predictions, free of every training row."""

    targets: list[TargetSpec]
    replays: dict[str, TargetReplay]
    decoders: dict[str, Decoder | None]
    models: dict[str, str]  # target -> the solution's name, as the submission record names it
    table: TableRecipe | None  # how the tabular map's columns were encoded (None: no such map)
    text: TextRecipe | None  # how the text map's columns were vectorised (None: no such map)
    tab_names: list[str]  # the tabular block's columns, in the models' order
    maps: list[str]  # the map codes the setup writes for test rows, in MAP_CODES order
    # How the image map's files are read (None: no such map); the replays embed the pictures
    # themselves (images.image_replay).
    pictures: PictureFiles | None = None

    def rows(self, frames: dict[str, pd.DataFrame], ids: Sequence[str], setup: Path | None = None) -> Rows:
        """The inputs of the rows of the test maps, in `ids` order; the image map's relative paths
        are read from `setup` (the setup folder its code ran in), as the solver reads them."""
        parts: dict[str, pd.Series] = {}
        if self.table is not None:
            rows = aligned(frames["tab"], ids).reindex(columns=list(self.table.columns)).reset_index(drop=True)
            parts.update(self.table.parts(rows, ids)[0])
        texts = None
        if self.text is not None:
            texts = self.text.texts(aligned(frames["txt"], ids))
            parts.update(self.text.stats(texts))
        missing = [name for name in self.tab_names if name not in parts]
        if missing:
            raise PredictError(f"the test maps give no column {missing[0]!r} of the model's inputs")
        tab = tab_matrix(parts, self.tab_names, len(ids))
        files = pixels = None
        if self.pictures is not None:
            if setup is None:
                raise PredictError("the image map's files are read from the setup folder: none given")
            try:
                files = self.pictures.paths(aligned(frames["img"], ids), setup)
            except ValueError as error:
                raise PredictError(str(error)) from error
            pixels = self.pictures.grids(files, len(ids))
        if texts is None:
            return Rows(tab, images=files, pixels=pixels)
        return Rows(tab, self.text.block(texts), joined_texts(texts) if texts else None,  # type: ignore[union-attr]
                    images=files, pixels=pixels)

    def predictions(self, frames: dict[str, pd.DataFrame], ids: Sequence[str],
                    setup: Path | None = None) -> dict[str, Predictions]:
        rows = self.rows(frames, ids, setup)
        return {spec.column: Predictions(self.models[spec.column], np.empty(0), self.replays[spec.column].test(rows),
                                         decoder=self.decoders[spec.column]) for spec in self.targets}


def load(path: Path) -> Predictor:
    with open(path, "rb") as handle:
        predictor = pickle.load(handle)
    if not isinstance(predictor, Predictor):
        raise PredictError(f"{path.name} holds no predictor")
    return predictor


def read_test_map(path: Path, table: TableRecipe | None) -> pd.DataFrame:
    """A test map as the solver reads it, a table's text columns as text even where the rows at
    hand hold only numbers (their encoding names text values)."""
    frame = read_map(path)
    if frame.columns.empty or frame.columns[0] != "id":
        raise PredictError(f"{path.name}: the first column must be named 'id'")
    encoded = table.encoding.text_columns() if table is not None else []
    text = [c for c in encoded if c in frame.columns and frame[c].dtype != object]
    if text:
        words = read_map(path, text=True)
        for column in text:
            frame[column] = words[column].mask(words[column] == "", np.nan).astype(object)
    return frame


def _data_view(work: Path, test_dir: Path, data_dir: str) -> None:
    """The agent's view of the competition (raw/), with the test folder's files as its data."""
    data = work / "raw" / data_dir
    data.mkdir(parents=True, exist_ok=True)
    for entry in sorted(test_dir.iterdir()):
        (data / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())


def _setup_copy(work: Path, setup: Path) -> Path:
    target = work / "setup"
    target.mkdir()
    for entry in setup.iterdir():
        if entry.is_file():
            (target / entry.name).write_bytes(entry.read_bytes())
    return target


def predict_folder(bundle: Path, test_dir: Path, out: Path) -> pd.DataFrame:
    """The submission of an exported predictor (`bundle`) for the test files in `test_dir`."""
    layout = ExportLayout(bundle)
    manifest = json.loads(layout.manifest.read_text(encoding="utf-8"))
    predictor = load(layout.predictor.model)
    if not test_dir.is_dir():
        raise PredictError(f"{test_dir} is no folder")
    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="agentk-predict-") as tmp:
        work = Path(tmp)
        _data_view(work, test_dir, str(manifest.get("data_dir") or "."))
        setup = _setup_copy(work, layout.setup)
        sys.path.insert(0, str(setup))  # generated code may import its siblings
        os.chdir(setup)  # generated code's contract: it runs with cwd = setup/
        data = work / "raw" / str(manifest.get("data_dir") or ".")
        expected = ", ".join(manifest.get("test_files") or []) or "the competition's test files"

        def failed(step: str, error: Exception) -> PredictError:
            said = f"{type(error).__name__}: {error}".replace(str(data), str(test_dir))
            return PredictError(f"the setup's {step} failed on {test_dir} (it should hold {expected}): {said}")

        try:
            try:
                frames = _test_maps(setup, predictor)
            except Exception as error:  # noqa: BLE001 - generated code: its failure is the folder's to fix
                raise failed("test-map code", error) from error
            first = frames[predictor.maps[0]]  # the solver's test ids: the first map's, in MAP_CODES order
            ids = list(dict.fromkeys(first["id"].tolist()))
            predictions = predictor.predictions(frames, ids, setup)
            artifacts = SimpleNamespace(
                targets=predictor.targets,
                transform=load_setup_module(setup / MODULE_FILES["transform"], "agentk_setup_transform"),
                submission=load_setup_module(setup / MODULE_FILES["submission"], "agentk_setup_submission"))
            try:
                submission = formatted_submission(artifacts, SimpleNamespace(test_ids=ids), predictions)  # type: ignore[arg-type]
            except Exception as error:  # noqa: BLE001 - generated code, as above
                raise failed("submission code", error) from error
        finally:
            os.chdir(here)
            sys.path.remove(str(setup))
    out.parent.mkdir(parents=True, exist_ok=True)
    submission.to_csv(out, index=False)
    return submission


def _test_maps(setup: Path, predictor: Predictor) -> dict[str, pd.DataFrame]:
    """The setup's test-map code run as its stages ran it (as scripts in setup/), each map read."""
    if not predictor.maps or set(predictor.maps) - {"tab", "txt", "img"}:
        raise PredictError(f"this predictor reads maps {predictor.maps}; only tables, texts and images are replayed")
    frames = {}
    for code in predictor.maps:
        runpy.run_path(str(setup / SetupLayout.input_map_code_name("test", code)), run_name="__main__")
        frames[code] = read_test_map(SetupLayout(setup).input_map("test", code), predictor.table if code == "tab" else None)
    return frames


def main(bundle: Path, argv: Sequence[str]) -> int:
    """`python predict.py TEST_DIR SUBMISSION.csv`."""
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print("usage: python predict.py TEST_DIR SUBMISSION.csv\n"
              "TEST_DIR holds the test files laid out as the competition's data folder.", file=sys.stderr)
        return 2
    test_dir, out = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    try:
        submission = predict_folder(bundle, test_dir, out)
    except PredictError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {out}: {len(submission)} rows, columns {list(submission.columns)}")
    return 0
