"""Pictures in every file form Kaggle ships: the one loader (agentk.core.pictures) on DICOM, 16-bit
and many-band TIFF and NumPy arrays made here; perception counting them as images and unpacking a
stacked array into one file per row; and `agentk run` end to end on a DICOM competition and on a
stacked-array one, each graded above the constant."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from agentk.bench.baselines import constant_score
from agentk.core.pictures import load_picture, picture_image, picture_size
from agentk.core.pixels import read_picture
from agentk.core.readers import file_kind
from agentk.sources import load_competition
from picture_files import blob, make_dicom_competition, make_stacked_competition, write_dicom
from setup_pipeline.expert.inspect import inspect_competition
from setup_pipeline.perception.catalogue import build_catalogue
from solve_pipeline.images.image_embedding import load_rgb, native_px
from solve_pipeline.images.image_features import _load_image


def ramp(h: int = 16, w: int = 20) -> np.ndarray:
    return np.arange(h * w, dtype=np.float64).reshape(h, w) / (h * w - 1)


# ---------------------------------------------------------------- DICOM

def test_dicom_applies_slope_intercept_and_window(tmp_path: Path) -> None:
    hu = ramp() * 2000 - 1000  # -1000 .. 1000
    stored = ((hu + 1024) / 2).round().astype(np.uint16)
    path = write_dicom(tmp_path / "scan.dcm", stored, slope=2.0, intercept=-1024, window=(0, 1000))
    picture = load_picture(path)
    assert picture.form == "dicom" and picture.pixels.shape == (16, 20, 1)
    real = stored.astype(float) * 2 - 1024
    expected = np.clip((real - (-500)) / 1000, 0, 1)  # the window 0±500
    np.testing.assert_allclose(picture.pixels[:, :, 0], expected, atol=1e-5)
    assert picture.pixels.min() == 0 and picture.pixels.max() == 1
    assert any("windowed" in n for n in picture.notes)
    presets = write_dicom(tmp_path / "presets.dcm", stored, slope=2.0, intercept=-1024, window=([0, 40], [1000, 400]))
    np.testing.assert_allclose(load_picture(presets).pixels, picture.pixels)  # the first preset


def test_dicom_monochrome1_is_inverted_and_scaled_by_its_range(tmp_path: Path) -> None:
    stored = (ramp() * 4000).astype(np.uint16)
    plain = load_picture(write_dicom(tmp_path / "m2.dcm", stored))
    inverted = load_picture(write_dicom(tmp_path / "m1.dcm", stored, photometric="MONOCHROME1"))
    np.testing.assert_allclose(plain.pixels[:, :, 0], stored / stored.max(), atol=1e-5)
    np.testing.assert_allclose(inverted.pixels, 1 - plain.pixels, atol=1e-6)
    assert inverted.pixels[0, 0, 0] == 1.0  # stored 0 is white in MONOCHROME1
    assert "MONOCHROME1 inverted" in inverted.notes


def test_dicom_is_known_by_content_whatever_its_name(tmp_path: Path) -> None:
    path = write_dicom(tmp_path / "scan.dcm", (ramp() * 300).astype(np.uint16))
    renamed = path.rename(tmp_path / "scan_0001")
    assert file_kind(renamed) == "image"
    assert load_picture(renamed).form == "dicom"
    assert picture_size(renamed) == (20, 16)


# ---------------------------------------------------------------- TIFF

def test_sixteen_bit_tiff_is_scaled_by_its_range(tmp_path: Path) -> None:
    import tifffile

    values = (ramp() * 4095).astype(np.uint16)  # 12 bits in 16
    tifffile.imwrite(tmp_path / "cells.tif", values)
    picture = load_picture(tmp_path / "cells.tif")
    assert picture.form == "tiff" and picture.pixels.shape == (16, 20, 1)
    np.testing.assert_allclose(picture.pixels[:, :, 0], values / 4095, atol=1e-6)
    assert any("range" in n for n in picture.notes)
    # Not the clipped 8-bit conversion PIL would do: the middle of the ramp is mid-grey.
    rgb = load_rgb(str(tmp_path / "cells.tif"), 16)
    assert rgb is not None and rgb.shape == (3, 16, 16) and 0.3 < float(rgb.mean()) < 0.7


def test_four_channel_tiff_keeps_three_and_says_so(tmp_path: Path) -> None:
    import tifffile

    bands = np.stack([ramp() * 1000, np.full((16, 20), 500.0), 1000 - ramp() * 1000, np.full((16, 20), 1000.0)], axis=2)
    tifffile.imwrite(tmp_path / "scene.tif", bands.astype(np.uint16), photometric="rgb", extrasamples=["unspecified"])
    picture = load_picture(tmp_path / "scene.tif")
    assert picture.pixels.shape == (16, 20, 3)
    expected = bands[:, :, :3] / 1000  # the picture's own range is 0..1000
    np.testing.assert_allclose(picture.pixels, expected, atol=2e-3)
    assert any("4 channels" in n for n in picture.notes)
    assert picture_image(tmp_path / "scene.tif").mode == "RGB"


def test_many_bands_are_averaged_in_three_groups(tmp_path: Path) -> None:
    import tifffile

    bands = np.stack([np.full((16, 20), float(b)) for b in range(6)], axis=0).astype(np.float32) / 5  # CxHxW
    tifffile.imwrite(tmp_path / "bands.tif", bands, photometric="minisblack", planarconfig="separate")
    picture = load_picture(tmp_path / "bands.tif")
    assert picture.pixels.shape == (16, 20, 3)
    np.testing.assert_allclose(picture.pixels[0, 0], [0.1, 0.5, 0.9], atol=1e-6)
    assert any("6 channels" in n for n in picture.notes)


# ---------------------------------------------------------------- arrays

def test_npy_grey_and_colour_in_either_channel_order(tmp_path: Path) -> None:
    grey = (ramp() * 255).astype(np.uint8)
    np.save(tmp_path / "grey.npy", grey)
    picture = load_picture(tmp_path / "grey.npy")
    assert picture.pixels.shape == (16, 20, 1)
    np.testing.assert_allclose(picture.pixels[:, :, 0], grey / 255, atol=1e-7)

    hwc = np.stack([ramp(), 1 - ramp(), np.full((16, 20), 0.25)], axis=2).astype(np.float32)
    np.save(tmp_path / "hwc.npy", hwc)
    np.save(tmp_path / "chw.npy", np.moveaxis(hwc, 2, 0))
    for name in ("hwc.npy", "chw.npy"):
        colour = load_picture(tmp_path / name)
        np.testing.assert_allclose(colour.pixels, hwc, atol=1e-7)  # floats in 0..1 stay as they are
        assert picture_size(tmp_path / name) == (20, 16)

    np.save(tmp_path / "counts.npy", (ramp() * 16).astype(np.int64))  # digits' 0..16: its own range
    np.testing.assert_allclose(load_picture(tmp_path / "counts.npy").pixels[:, :, 0], (ramp() * 16).astype(int) / 16)


def test_npz_and_what_is_no_picture(tmp_path: Path) -> None:
    np.savez(tmp_path / "one.npz", image=(ramp() * 255).astype(np.uint8), mask=np.zeros((16, 20), bool))
    assert file_kind(tmp_path / "one.npz") == "image"
    assert load_picture(tmp_path / "one.npz").pixels.shape == (16, 20, 1)
    np.save(tmp_path / "signal.npy", np.zeros((3, 4096), np.float32))  # a per-row signal, not a picture
    np.save(tmp_path / "vector.npy", np.zeros(512, np.float32))
    assert file_kind(tmp_path / "signal.npy") == "other" and file_kind(tmp_path / "vector.npy") == "other"
    with open(tmp_path / "disguised.dat", "wb") as handle:  # NumPy's magic under another name
        np.save(handle, (ramp() * 255).astype(np.uint8))
    assert file_kind(tmp_path / "disguised.dat") == "image"


def test_every_reader_reads_every_form(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    picture = blob(2, rng)
    stored = (picture * 1000).astype(np.uint16)
    write_dicom(tmp_path / "a.dcm", stored)
    np.save(tmp_path / "a.npy", (picture * 255).astype(np.uint8))
    Image.fromarray((picture * 255).astype(np.uint8)).save(tmp_path / "a.png")
    paths = [str(tmp_path / n) for n in ("a.dcm", "a.npy", "a.png")]
    embedded = [load_rgb(p, 32) for p in paths]
    grids = [_load_image(p, 12) for p in paths]
    for x, grid in zip(embedded, grids):
        assert x is not None and x.shape == (3, 32, 32)
        assert grid.shape == (12, 12) and grid[:, 8:].mean() > grid[:, :4].mean() + 0.1  # the blob is on the right
    np.testing.assert_allclose(embedded[1], embedded[2], atol=1 / 255 + 1e-6)
    assert native_px(paths) == 24
    # The pixel path: PNG as before, DICOM by its range in the same scale as an 8-bit picture's.
    np.testing.assert_allclose(read_picture(paths[2]), (picture * 255).astype(np.uint8) / 255, atol=1e-6)
    by_range = (stored - stored.min()) / (stored.max() - stored.min())
    np.testing.assert_allclose(read_picture(paths[0]), by_range, atol=1e-5)
    np.testing.assert_allclose(read_picture(paths[0], scale=1.0), by_range * 255, atol=1e-3)


# ---------------------------------------------------------------- perception

def test_stacked_array_becomes_one_picture_per_row(tmp_path: Path) -> None:
    source = make_stacked_competition(tmp_path / "comp", n_train=40, n_test=20)
    raw = tmp_path / "ws" / "raw"
    (raw).mkdir(parents=True)
    (raw / "data").symlink_to(source / "data")
    (raw / "description.md").write_text((source / "description.md").read_text())
    catalogue = build_catalogue(raw)
    assert sorted(s.name for s in catalogue.stacks) == ["test_images", "train_images"]
    assert not any(p.suffix == ".npy" for p in catalogue.images + catalogue.others)
    facts = inspect_competition(raw)
    layout = facts.image
    assert layout is not None and facts.input_modalities == ["image"]
    assert layout.stack_dirs == {"train": "../setup/pictures/train_images", "test": "../setup/pictures/test_images"}
    assert (layout.n_train_images, layout.n_test_images) == (40, 20)
    unpacked = tmp_path / "ws" / "setup" / "pictures" / "train_images"
    stack = np.load(source / "data" / "train_images.npy")
    assert len(list(unpacked.glob("*.npy"))) == 40
    np.testing.assert_array_equal(np.load(unpacked / "17.npy"), stack[17])
    assert not list(source.rglob("*_unpacked")) and not (source / "data" / "pictures").exists()
    assert any("train_images.npy holds 40 pictures" in n for n in facts.notes), facts.notes
    written = (unpacked / "0.npy").stat().st_mtime_ns
    assert inspect_competition(raw).image == layout and (unpacked / "0.npy").stat().st_mtime_ns == written  # once


def test_one_array_per_picture_is_no_stack(tmp_path: Path) -> None:
    """Channels-first pictures (3x32x32) beside a three-row table stay twelve pictures."""
    data = tmp_path / "raw" / "data"
    (data / "images").mkdir(parents=True)
    for i in range(12):
        np.save(data / "images" / f"{i}.npy", np.zeros((3, 32, 32), np.float32))
    (data / "bands.csv").write_text("band,wavelength\nred,665\ngreen,560\nblue,490\n")
    catalogue = build_catalogue(tmp_path / "raw")
    assert catalogue.stacks == [] and len(catalogue.images) == 12


def test_npz_stacks_beside_labels_alone_and_the_sample(tmp_path: Path) -> None:
    """One .npz holding train's and test's pictures, a train.csv of labels only (no id) and no
    test table: train rows are numbered, the sample's rows are the test pictures in order."""
    source = make_stacked_competition(tmp_path / "comp", n_train=30, n_test=20)
    data = source / "data"
    train, test = np.load(data / "train_images.npy"), np.load(data / "test_images.npy")
    np.savez(data / "arrays.npz", x_train=train, x_test=test)
    for name in ("train_images.npy", "test_images.npy", "test.csv"):
        (data / name).unlink()
    pd.read_csv(data / "train.csv")[["label"]].to_csv(data / "train.csv", index=False)
    facts = inspect_competition(source)
    layout = facts.image
    assert layout is not None and facts.train_file == "data/train.csv" and facts.test_file is None
    assert layout.stack_dirs == {"train": "../setup/pictures/arrays_x_train", "test": "../setup/pictures/arrays_x_test"}
    np.testing.assert_array_equal(np.load(tmp_path / "setup" / "pictures" / "arrays_x_test" / "19.npy"), test[19])
    assert any("row i of the sample being picture i" in n for n in facts.notes), facts.notes


def test_dicom_id_files_are_an_image_layout(tmp_path: Path) -> None:
    source = make_dicom_competition(tmp_path / "comp", n_train=12, n_test=6)
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "data").symlink_to(source / "data")
    (raw / "description.md").write_text((source / "description.md").read_text())
    facts = inspect_competition(raw)
    layout = facts.image
    assert layout is not None and layout.kind == "id_files" and layout.extension == ".dcm"
    assert (layout.n_train_images, layout.n_test_images) == (12, 6)
    assert any(n.startswith("pictures are DICOM") for n in facts.notes), facts.notes


def test_dicom_named_by_its_uid_alone_is_found_by_content(tmp_path: Path) -> None:
    """No extension, and a name whose last dot is no extension: the layout, the generated test map
    and the map's check all find the pictures by content."""
    from agentk.core.artifacts import SetupLayout
    from agentk.core.records.workspace import Workspace
    from setup_pipeline.expert import codegen
    from setup_pipeline.stages import _map_stage
    from unit_tests_setup.stage_checks import _image_path_problems

    source = make_dicom_competition(tmp_path / "comp", n_train=12, n_test=6, uids=True)
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    load_competition(source).prepare(workspace.raw)
    facts = inspect_competition(workspace.raw)
    layout = facts.image
    assert layout is not None and layout.kind == "id_files" and layout.ids_include_extension
    stage = _map_stage("test", "image")
    code = workspace.setup / stage.output
    code.write_text(stage.render(codegen.image_map(facts, "test")))
    subprocess.run([sys.executable, str(code)], check=True, capture_output=True, cwd=workspace.setup)
    frame = pd.read_csv(SetupLayout(workspace.setup).input_map("test", "img"), dtype=str)
    assert sorted(frame["id"]) == sorted(pd.read_csv(source / "data" / "sample_submission.csv", dtype=str)["patient_id"])
    assert _image_path_problems(frame, workspace.setup, "test map") == []
    assert load_picture(workspace.setup / frame["image_path"][0]).form == "dicom"


# ---------------------------------------------------------------- end to end

def _run_and_grade(source: Path, root: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "agentk.cli", "run", str(source), "--workspace-root", str(root / "ws"),
                           "--time-budget", "10", "--folds", "3", "--json"],
                          cwd=root, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    competition = load_competition(source)
    workspace = root / "ws" / competition.id
    result = json.loads((workspace / "result.json").read_text())
    assert result["valid_submission"] is True
    assert all(stage["passed"] for stage in result["setup"].values()), result["setup"]
    assert all(meta["passed"] for meta in result["meta"].values()), result["meta"]
    constant = constant_score(competition)
    assert constant is not None and result["test_score"] is not None
    print(f"{competition.id}: test {result['test_score']:.3f}, constant {constant:.3f}")  # -s shows the figures
    assert result["test_score"] >= constant + 0.2, (result["test_score"], constant)


@pytest.mark.integration
def test_dicom_competition_end_to_end(tmp_path: Path) -> None:
    _run_and_grade(make_dicom_competition(tmp_path / "blob-dicom"), tmp_path)


@pytest.mark.integration
def test_stacked_array_competition_end_to_end(tmp_path: Path) -> None:
    source = make_stacked_competition(tmp_path / "blob-stacked")
    _run_and_grade(source, tmp_path)
    workspace = tmp_path / "ws" / "blob-stacked"
    assert len(list((workspace / "setup" / "pictures" / "test_images").glob("*.npy"))) == 60
    assert not list((workspace / "raw").rglob("0.npy"))  # unpacked beside the setup, never in raw/
