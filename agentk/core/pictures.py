"""One reader for a picture in every form Kaggle ships one: PNG/JPEG/BMP/GIF/WEBP, TIFF of any depth
or channel count, DICOM, and NumPy arrays (`.npy`, `.npz`).

The form is told by content (DICOM's `DICM` at byte 128, NumPy's magic, TIFF's and zip's), the
extension only where content cannot say (a DICOM without its preamble). Every picture comes back as
floats in 0..1, height x width x 1 or 3 channels:
  * 8-bit data is divided by 255; floats already in 0..1 stay; any other depth (16-bit TIFF, int64
    arrays, Hounsfield units) is scaled by the picture's own range, since a 12-bit scan stored in
    16 bits would otherwise be nearly black;
  * DICOM gets its RescaleSlope/Intercept, then its own window (WindowCenter/Width) or its range,
    and MONOCHROME1 (white is 0) is inverted;
  * more channels than 3 are reduced: 4 keep the first three (RGBA, RGB+near-infrared), more are
    averaged in three contiguous groups of bands; 2 become (first, second, mean). `Picture.notes`
    says what was done, so perception can tell the plan.
Every reader of pictures (embedding, fine-tuning, the pixel grids, the pixel task) goes through
here; 8-bit files PIL reads are handed to PIL exactly as before.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from PIL import Image

PIL_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")
DICOM_EXTENSIONS = (".dcm", ".dicom")
ARRAY_EXTENSIONS = (".npy", ".npz")
PICTURE_EXTENSIONS = PIL_EXTENSIONS + DICOM_EXTENSIONS + ARRAY_EXTENSIONS

PictureForm = Literal["pil", "tiff", "dicom", "npy", "npz"]
ArrayLayout = Literal["grey", "hwc", "chw"]

_NPY_MAGIC = b"\x93NUMPY"
_TIFF_MAGICS = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
_PIL_MAGICS = (b"\x89PNG", b"\xff\xd8\xff", b"BM", b"GIF8", b"RIFF")
# PIL modes that are 8 bits a sample: converted by PIL as always. Other modes (I;16, I, F) and
# files PIL cannot open go through numpy and the scaling rules above.
_EIGHT_BIT_MODES = {"1", "L", "LA", "P", "PA", "RGB", "RGBA", "RGBX", "RGBa", "CMYK", "YCbCr", "LAB", "HSV", "La"}
# The setup's folder (under setup/) of pictures it writes one file per row: unpacked stacked
# arrays, pictures written as numbers in table cells.
PICTURES_FOLDER = "pictures"
MIN_SIDE = 8  # an array narrower than this is a signal or a feature vector, not a picture
MAX_ASPECT = 32
MAX_CHANNELS = 16  # a smaller leading or trailing axis than this is channels (RGB, bands)
_ARRAY_NAMES = ("image", "images", "img", "x", "data", "pixels", "arr_0")


class UnreadablePicture(ValueError):
    """A file that is no picture this module reads; the message is one line."""


@dataclass(frozen=True)
class Picture:
    pixels: np.ndarray  # float32, (height, width, 1 or 3), values in 0..1
    form: PictureForm
    notes: tuple[str, ...] = ()  # how the values were scaled and channels reduced


# ---------------------------------------------------------------- what a file is

def picture_form(path: str | Path) -> PictureForm | None:
    """The picture form of a file from its first bytes (arrays: only when their shape is one
    picture), None for anything else."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(132)
    except OSError:
        return None
    if head.startswith(_NPY_MAGIC):
        return "npy" if array_layout(array_shape(path) or ()) else None
    if head.startswith(b"PK\x03\x04"):
        return "npz" if _npz_picture_member(path) is not None else None
    if head[128:132] == b"DICM" or (path.suffix.lower() in DICOM_EXTENSIONS and _dicom_without_preamble(path)):
        return "dicom"
    if head.startswith(_TIFF_MAGICS):
        return "tiff"
    if head.startswith(_PIL_MAGICS) and (not head.startswith(b"RIFF") or head[8:12] == b"WEBP"):
        return "pil"
    # A magic not listed above under a picture's name (PIL knows more): PIL is asked, as before.
    return "pil" if path.suffix.lower() in PIL_EXTENSIONS and head else None


def _dicom_without_preamble(path: Path) -> bool:
    try:
        import pydicom

        ds = pydicom.dcmread(path, stop_before_pixels=True, force=True)
        return "Rows" in ds and "Columns" in ds
    except Exception:  # noqa: BLE001 - pydicom raises many kinds on a file that is not DICOM
        return False


def array_layout(shape: tuple[int, ...]) -> ArrayLayout | None:
    """How an array holds one picture: a grey plane, channels last or first; None when its shape
    is no single picture (a vector, a signal, a stack of pictures)."""

    def plane(h: int, w: int) -> bool:
        return min(h, w) >= MIN_SIDE and max(h, w) <= MAX_ASPECT * min(h, w)

    if len(shape) == 2:
        return "grey" if plane(*shape) else None
    if len(shape) != 3:
        return None
    if shape[2] <= MAX_CHANNELS and shape[2] < min(shape[:2]) and plane(shape[0], shape[1]):
        return "hwc"
    if shape[0] <= MAX_CHANNELS and shape[0] < min(shape[1:]) and plane(shape[1], shape[2]):
        return "chw"
    return None


def array_shape(path: str | Path) -> tuple[int, ...] | None:
    """The shape of a `.npy` file from its header alone."""
    try:
        with open(path, "rb") as fh:
            return _header_shape(fh)
    except (OSError, ValueError):
        return None


def _header_shape(fh: IO[bytes]) -> tuple[int, ...]:
    version = np.lib.format.read_magic(fh)
    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _fortran, _dtype = reader(fh)
    return tuple(int(n) for n in shape)


def npz_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Every array of a `.npz` by name, with its shape, from the headers alone ({} for no npz)."""
    shapes: dict[str, tuple[int, ...]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if not names or not all(n.endswith(".npy") for n in names):
                return {}
            for name in names:
                with archive.open(name) as member:
                    shapes[name.removesuffix(".npy")] = _header_shape(member)
    except (OSError, ValueError, zipfile.BadZipFile):
        return {}
    return shapes


def _npz_picture_member(path: Path) -> str | None:
    """The array of a `.npz` that is its picture: the one there is, else the first picture-shaped
    one named like an image (an npz may keep a mask or a label beside it)."""
    pictures = {name: shape for name, shape in npz_shapes(path).items() if array_layout(shape)}
    if not pictures:
        return None
    named = [n for n in pictures if n.lower() in _ARRAY_NAMES]
    return (named or list(pictures))[0]


def is_picture(path: str | Path) -> bool:
    return picture_form(path) is not None


# ---------------------------------------------------------------- values

def to_unit(values: np.ndarray) -> tuple[np.ndarray, str | None]:
    """Values scaled to 0..1 by their dtype (8 bits) or their own range, with a note when the
    range was used."""
    if values.dtype == np.bool_:
        return values.astype(np.float32), None
    if values.dtype == np.uint8:
        return values.astype(np.float32) / np.float32(255), None
    data = values.astype(np.float32)
    finite = np.isfinite(data)
    if not finite.all():
        data = np.where(finite, data, np.float32(np.nanmin(np.where(finite, data, np.nan)) if finite.any() else 0))
    lo, hi = float(data.min()) if data.size else 0.0, float(data.max()) if data.size else 0.0
    if np.issubdtype(values.dtype, np.floating) and lo >= 0 and hi <= 1:
        return data, None
    if hi <= lo:
        return np.zeros_like(data), f"{values.dtype} values, constant"
    return (data - np.float32(lo)) / np.float32(hi - lo), f"{values.dtype} values scaled by each picture's range"


def to_channels(data: np.ndarray) -> tuple[np.ndarray, str | None]:
    """(h, w, c) to (h, w, 1 or 3), with a note when channels were reduced."""
    c = data.shape[2]
    if c in (1, 3):
        return data, None
    if c == 2:
        return np.concatenate([data, data.mean(axis=2, keepdims=True)], axis=2), "2 channels: (first, second, mean) as RGB"
    if c == 4:
        return data[:, :, :3], "4 channels: the first three kept (RGBA, or RGB and near-infrared)"
    groups = np.array_split(np.arange(c), 3)
    reduced = np.stack([data[:, :, g].mean(axis=2) for g in groups], axis=2)
    return reduced, f"{c} channels: averaged in three contiguous groups of bands as RGB"


def _from_array(values: np.ndarray, form: PictureForm, notes: list[str]) -> Picture:
    layout = array_layout(values.shape)
    if layout is None:
        raise UnreadablePicture(f"an array of shape {values.shape} is not one picture")
    if layout == "grey":
        values = values[:, :, None]
    elif layout == "chw":
        values = np.moveaxis(values, 0, 2)
    data, scaled = to_unit(values)
    data, reduced = to_channels(data)
    notes += [n for n in (scaled, reduced) if n]
    return Picture(np.ascontiguousarray(np.clip(data, 0, 1), dtype=np.float32), form, tuple(notes))


def _dicom(path: Path) -> Picture:
    import pydicom

    try:
        ds = pydicom.dcmread(path, force=True)
        values = np.asarray(ds.pixel_array)
    except Exception as exc:  # noqa: BLE001 - no decoder for its compression, a torn file: one line
        raise UnreadablePicture(f"{path.name}: DICOM pixels unreadable ({type(exc).__name__}: {exc})") from exc
    notes: list[str] = []
    frames = int(getattr(ds, "NumberOfFrames", 1) or 1)
    colour = int(getattr(ds, "SamplesPerPixel", 1) or 1) > 1
    if frames > 1:
        values = values[frames // 2]
        notes.append(f"{frames} frames: the middle one")
    if colour:
        return _from_array(values, "dicom", notes)
    values = values.astype(np.float64) * float(getattr(ds, "RescaleSlope", 1) or 1) + float(getattr(ds, "RescaleIntercept", 0) or 0)
    center, width = _first(getattr(ds, "WindowCenter", None)), _first(getattr(ds, "WindowWidth", None))
    if center is not None and width is not None and width > 0:
        lo, hi = center - width / 2, center + width / 2
        notes.append(f"windowed at {center:g}±{width / 2:g}")
    else:
        lo, hi = float(values.min()), float(values.max())
        notes.append("scaled by each picture's range")
    data = np.clip((values - lo) / (hi - lo), 0, 1) if hi > lo else np.zeros_like(values)
    if str(getattr(ds, "PhotometricInterpretation", "")).upper() == "MONOCHROME1":
        data = 1.0 - data
        notes.append("MONOCHROME1 inverted")
    return Picture(data.astype(np.float32)[:, :, None], "dicom", tuple(notes))


def _first(value: object) -> float | None:
    """A DICOM number that may be multi-valued (WindowCenter lists one per preset): the first."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        value = value[0] if len(value) else None
    try:
        return float(value) if value is not None else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _tiff(path: Path) -> Picture:
    try:
        import tifffile

        values = np.asarray(tifffile.imread(path, key=0))
    except ImportError:  # without tifffile, what PIL reads of it
        from PIL import Image

        with Image.open(path) as image:
            values = np.asarray(image)
    if values.ndim == 3 and array_layout(values.shape) is None and values.shape[0] > 1:
        values = values[0]  # pages or a z-stack: the first
    return _from_array(values, "tiff", [])


def _npz(path: Path) -> Picture:
    member = _npz_picture_member(path)
    if member is None:
        raise UnreadablePicture(f"{path.name} holds no array shaped like one picture")
    with np.load(path, allow_pickle=False) as arrays:
        return _from_array(np.asarray(arrays[member]), "npz", [] if len(arrays.files) == 1 else [f"array {member!r}"])


def load_picture(path: str | Path) -> Picture:
    """The picture in a file of any form above, or UnreadablePicture (OSError for a file that
    cannot be read at all)."""
    path = Path(path)
    form = picture_form(path)
    if form is None:
        raise UnreadablePicture(f"{path.name} is no picture I can read")
    if form == "dicom":
        return _dicom(path)
    if form == "npy":
        return _from_array(np.load(path, allow_pickle=False), "npy", [])
    if form == "npz":
        return _npz(path)
    from PIL import Image

    try:
        with Image.open(path) as image:
            if _eight_bit(image):
                return Picture(_pil_unit(image), form)
            values = np.asarray(image)
    except (OSError, ValueError):  # a TIFF PIL cannot open (16-bit colour, many bands)
        if form != "tiff":
            raise
        return _tiff(path)
    return _tiff(path) if form == "tiff" else _from_array(values, form, [])


def _eight_bit(image: Image.Image) -> bool:
    """Whether PIL reads the image's samples whole: an 8-bit mode, and for a TIFF, 8-bit samples
    (PIL shows a 16-bit RGBA TIFF as RGBA, keeping only the low bytes)."""
    if image.mode not in _EIGHT_BIT_MODES:
        return False
    bits = getattr(image, "tag_v2", {}).get(258, (8,)) if image.format == "TIFF" else (8,)
    return max(bits if isinstance(bits, tuple) else (bits,)) <= 8


def _pil_unit(image: Image.Image) -> np.ndarray:
    converted = image.convert("L") if image.mode in ("1", "L", "LA", "La", "P") and _is_grey(image) else image.convert("RGB")
    data = np.asarray(converted, dtype=np.float32) / np.float32(255)
    return data[:, :, None] if data.ndim == 2 else data


def _is_grey(image: Image.Image) -> bool:
    if image.mode != "P":
        return True
    palette = image.getpalette() or []
    return all(palette[i] == palette[i + 1] == palette[i + 2] for i in range(0, len(palette) - 2, 3))


def picture_image(path: str | Path, mode: Literal["RGB", "L"] = "RGB", covering: int | None = None) -> Image.Image:
    """The picture as an 8-bit PIL image in `mode`, ready to resize: what PIL reads as it reads
    it, every other form through load_picture. With `covering`, a JPEG is decoded at the smallest
    power-of-two scale that still covers covering x covering pixels (a large photo costs a fraction
    of its full decode)."""
    from PIL import Image

    path = Path(path)
    form = picture_form(path)
    if form in ("pil", "tiff"):
        try:
            with Image.open(path) as image:
                if _eight_bit(image):
                    if covering is not None:
                        image.draft(mode, (covering, covering))
                    return image.convert(mode)
        except OSError:
            if form != "tiff":
                raise
    picture = load_picture(path)
    pixels = np.round(picture.pixels * 255).astype(np.uint8)
    image = Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels)
    return image.convert(mode)


def grey_values(path: str | Path) -> np.ndarray:
    """A picture as 2-D float32 grey values in the units it is stored in where PIL reads it (0..255,
    a 16-bit PNG's own units), else its 0..1 picture stretched to 0..255: the pixel task scores
    submissions in the file's own units."""
    from PIL import Image

    path = Path(path)
    if picture_form(path) in ("pil", "tiff"):
        try:
            with Image.open(path) as image:
                if _eight_bit(image) or image.mode in ("I", "I;16", "F"):
                    grey = image.convert("F") if image.mode in ("I", "I;16", "F") else image.convert("L")
                    return np.asarray(grey, dtype=np.float32)
        except OSError:
            pass  # a TIFF PIL cannot open: read below
    return load_picture(path).pixels.mean(axis=2) * np.float32(255)


def picture_size(path: str | Path) -> tuple[int, int] | None:
    """(width, height) from the headers where the form allows, None when it is no picture."""
    path = Path(path)
    form = picture_form(path)
    try:
        if form == "npy":
            shape = array_shape(path) or ()
        elif form == "npz":
            member = _npz_picture_member(path)
            shape = npz_shapes(path).get(member or "", ())
        elif form == "dicom":
            import pydicom

            ds = pydicom.dcmread(path, stop_before_pixels=True, force=True)
            return int(ds.Columns), int(ds.Rows)
        elif form is not None:
            from PIL import Image

            try:
                with Image.open(path) as image:
                    return image.size
            except OSError:
                shape = load_picture(path).pixels.shape
                return shape[1], shape[0]
        else:
            return None
    except Exception:  # noqa: BLE001 - a header no reader understands: no size
        return None
    layout = array_layout(shape)
    if layout is None:
        return None
    h, w = shape[1:3] if layout == "chw" else shape[:2]
    return int(w), int(h)
