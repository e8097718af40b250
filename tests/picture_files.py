"""Pictures in the file forms Kaggle ships (DICOM, 16-bit and many-band TIFF, NumPy arrays), made
in the test, and two small competitions built from them: DICOM files named by their ids, and
pictures stacked in one `.npy` per split beside train.csv/test.csv. The class is where a bright
blob sits, so a model must read the pixels to beat the constant."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SIDE = 24  # under the pretrained backbones' floor: the pixel models solve it in seconds
CLASSES = ("left", "middle", "right")

DESCRIPTION = """# Blob Position

## Overview
Each picture shows one bright blob. Predict where it sits: `left`, `middle` or `right`.

## Evaluation
Submissions are scored by classification accuracy.

### Submission format
```
{id},label
{example},left
```

## Data
{data}
- **sample_submission.csv**: every test picture with a placeholder label.
"""

TOML = """[competition]
id = "{name}"
title = "Blob Position"
input_modalities = ["image"]
task_type = "multiclass"

[grading]
metric = "accuracy"
higher_is_better = true
id_column = "{id}"
target_columns = ["label"]
answers = "private/answers.csv"
"""


def write_dicom(path: Path, stored: np.ndarray, *, photometric: str = "MONOCHROME2", slope: float = 1.0,
                intercept: float = 0.0, window: tuple[float, float] | None = None) -> Path:
    """A DICOM file written by pydicom from stored values (uint16 or int16)."""
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, SecondaryCaptureImageStorage, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = SecondaryCaptureImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(str(path), {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID = SecondaryCaptureImageStorage
    ds.Modality = "CT"
    ds.set_pixel_data(stored, photometric_interpretation=photometric, bits_stored=stored.dtype.itemsize * 8)
    ds.RescaleSlope, ds.RescaleIntercept = slope, intercept
    if window is not None:
        ds.WindowCenter, ds.WindowWidth = window
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
    return path


def blob(label: int, rng: np.random.Generator, side: int = SIDE) -> np.ndarray:
    """A picture in 0..1: noise and a bright blob in the label's third, at a random height."""
    yy, xx = np.mgrid[0:side, 0:side]
    cx = (label + 0.5) * side / 3 + rng.uniform(-1.5, 1.5)
    cy = rng.uniform(side * 0.25, side * 0.75)
    picture = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * 2.0 ** 2))
    return np.clip(picture + rng.normal(0, 0.08, picture.shape), 0, 1)


def _labels(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(np.arange(n) % len(CLASSES))


def _finish(out: Path, name: str, id_column: str, test_ids: list[str], test_labels: np.ndarray, data: str) -> Path:
    (out / "private").mkdir(parents=True, exist_ok=True)
    (out / "data" / "sample_submission.csv").write_text(
        f"{id_column},label\n" + "".join(f"{i},left\n" for i in test_ids))
    (out / "private" / "answers.csv").write_text(
        f"{id_column},label\n" + "".join(f"{i},{CLASSES[y]}\n" for i, y in zip(test_ids, test_labels)))
    (out / "description.md").write_text(DESCRIPTION.format(id=id_column, example=test_ids[0], data=data))
    (out / "competition.toml").write_text(TOML.format(name=name, id=id_column))
    return out


def make_dicom_competition(out: Path, n_train: int = 150, n_test: int = 60, seed: int = 0, uids: bool = False) -> Path:
    """data/train/<id>.dcm and data/test/<id>.dcm (CT-like stored values, slope and intercept,
    a third of them MONOCHROME1) with train.csv (patient_id,label). With `uids`, ids are DICOM
    UIDs and each file is named by its UID alone, without an extension."""
    rng = np.random.default_rng(seed)
    labels = _labels(n_train + n_test, rng)
    ids = [f"1.2.826.0.1.3680043.8.498.{rng.integers(10**9)}" if uids else f"ID_{rng.integers(16**8):08x}"
           for _ in range(n_train + n_test)]
    suffix = "" if uids else ".dcm"
    for i, (pid, label) in enumerate(zip(ids, labels)):
        values = blob(int(label), rng) * 1500 - 1000  # Hounsfield-like units
        folder = "train" if i < n_train else "test"
        if i % 3 == 0:  # white is 0: stored inverted
            stored = (1024 + 500 - values).astype(np.uint16)
            write_dicom(out / "data" / folder / f"{pid}{suffix}", stored, photometric="MONOCHROME1", intercept=-1024)
        else:
            stored = ((values + 1024) / 2).astype(np.uint16)
            write_dicom(out / "data" / folder / f"{pid}{suffix}", stored, slope=2.0, intercept=-1024)
    (out / "data" / "train.csv").write_text(
        "patient_id,label\n" + "".join(f"{ids[i]},{CLASSES[labels[i]]}\n" for i in range(n_train)))
    return _finish(out, "blob-dicom", "patient_id", ids[n_train:], labels[n_train:],
                   "- **train/**, **test/**: one DICOM scan per patient, named `<patient_id>.dcm`.\n"
                   "- **train.csv**: `patient_id,label` for the training scans.")


def make_stacked_competition(out: Path, n_train: int = 150, n_test: int = 60, seed: int = 1) -> Path:
    """data/train_images.npy (N, side, side) uint8 and data/test_images.npy beside train.csv
    (id,label) and test.csv (id): row i is picture i; ids in no sorted order."""
    rng = np.random.default_rng(seed)
    labels = _labels(n_train + n_test, rng)
    ids = [str(v) for v in rng.choice(10**6, n_train + n_test, replace=False)]
    pictures = np.stack([(blob(int(y), rng) * 255).astype(np.uint8) for y in labels])
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    np.save(data / "train_images.npy", pictures[:n_train])
    np.save(data / "test_images.npy", pictures[n_train:])
    (data / "train.csv").write_text("id,label\n" + "".join(f"{ids[i]},{CLASSES[labels[i]]}\n" for i in range(n_train)))
    (data / "test.csv").write_text("id\n" + "".join(f"{i}\n" for i in ids[n_train:]))
    return _finish(out, "blob-stacked", "id", ids[n_train:], labels[n_train:],
                   "- **train_images.npy**, **test_images.npy**: the pictures, one per row of train.csv and test.csv, in order.\n"
                   "- **train.csv**: `id,label`; **test.csv**: `id`.")



# Blob colours of one brightness (ITU-R 601 luma ~76): grey pixel grids cannot tell the classes
# apart, a pretrained network reading colour can.
HUES = ((255, 0, 0), (0, 130, 0), (160, 0, 255))


def make_png_competition(out: Path, n_train: int = 60, n_test: int = 30, side: int = 40, seed: int = 2) -> Path:
    """data/images/<id>.png (RGB, big enough for the pretrained backbones) with train.csv
    (image_id,label) and test.csv (image_id): the layout most photo competitions ship. The class
    is the blob's colour (its place is random), so a model must read the pictures in colour."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    labels = _labels(n_train + n_test, rng)
    ids = [f"img_{rng.integers(16**6):06x}" for _ in range(n_train + n_test)]
    folder = out / "data" / "images"
    folder.mkdir(parents=True, exist_ok=True)
    for pid, label in zip(ids, labels):
        shape = blob(int(rng.integers(len(CLASSES))), rng, side)[..., None]
        picture = 40 + shape * (np.array(HUES[int(label)]) - 40)
        Image.fromarray(np.clip(picture, 0, 255).astype(np.uint8), "RGB").save(folder / f"{pid}.png")
    data = out / "data"
    (data / "train.csv").write_text("image_id,label\n" + "".join(f"{ids[i]},{CLASSES[labels[i]]}\n" for i in range(n_train)))
    (data / "test.csv").write_text("image_id\n" + "".join(f"{i}\n" for i in ids[n_train:]))
    return _finish(out, "blob-png", "image_id", ids[n_train:], labels[n_train:],
                   "- **images/**: every picture, named `<image_id>.png`.\n"
                   "- **train.csv**: `image_id,label`; **test.csv**: `image_id`.")
