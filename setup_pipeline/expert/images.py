"""Where a competition's images are and how their names relate to the ids: class folders, train
images named by their class (`cat.0.jpg`), a flat folder beside a labels table, one folder per id, a
path column, test images in several folders. Sound clips (one file per example too) are found by
the same rules: with no images, the inspection's file list holds the clips and `media` is "audio".

A mixin of the expert's inspection: it reads the inspection's state (raw/, the image list, the
train, test and sample frames, the page's example rows) and records notes like the rest of it.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel

from agentk.core.pictures import load_picture
from agentk.core.readers import IMAGE_EXTENSIONS
from agentk.core.sound_files import AUDIO_EXTENSIONS
from setup_pipeline.expert.name_labels import NameLabels, find_name_labels
from setup_pipeline.perception.picture_cells import find_picture_cells, write_picture_cells
from setup_pipeline.perception.stacks import PICTURES_FOLDER, PictureStack, unpack_stack


def present(series: pd.Series) -> pd.Series:
    """Non-missing cells as stripped text."""
    values = series.astype(str).str.strip()
    return values[values != ""]


def rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


class ImageLayout(BaseModel):
    """Where the images (or, with media "audio", the sound clips) are; every path is relative to raw/.

    Image file for an id: class_folders → `<train_dir>/<label>/<id><ext>` and `<test_dir>/<id><ext>`;
    name_labels → the images in `<train_dir>` whose stems match `name_label_pattern` (its group
    "label" is the label), numbered in name order as `train_<i>`, and `<test_dir>/<id><ext>`; id_files → `<image_dir or train_dir/test_dir>/<id>` plus `extension` unless
    `ids_include_extension`; with `path_column`, `<path_base>/<value of path_column>`.
    """

    kind: Literal["class_folders", "name_labels", "id_files"]
    media: Literal["image", "audio"] = "image"  # audio: files recognised by content, not extension
    train_dir: str | None = None
    test_dir: str | None = None
    image_dir: str | None = None
    extension: str  # the dominant one, lower-case with the dot
    ids_include_extension: bool = False
    ids_are_folders: bool = False  # each image sits in a folder named by its id
    path_column: str | None = None
    path_base: str | None = None
    path_stems: bool = False  # the path column names each file by its stem, found under path_base
    name_label_pattern: str | None = None  # name_labels: a regex on the file stem, group "label"
    # A split whose pictures were stacked in one array: the folder (relative to raw/, under
    # setup/pictures/) holding `<row>.npy` for each row of the split's table (or of the sample).
    stack_dirs: dict[str, str] = {}
    picture_size: tuple[int, int] | None = None  # (height, width) when every picture has it
    n_train_images: int = 0
    n_test_images: int = 0


class ImageLayouts:
    """The image half of the inspection (see the module docstring). `self.images` holds the files
    a layout is found among: the images, else the sound clips (`self.media` says which)."""

    media: Literal["image", "audio"] = "image"

    @property
    def media_suffixes(self) -> tuple[str, ...]:
        """How names of the media files end: a clip's may be any (the catalogue read its bytes)."""
        if self.media == "audio":
            return tuple(sorted({*AUDIO_EXTENSIONS, *(p.suffix.lower() for p in self.images if p.suffix)}))
        return IMAGE_EXTENSIONS

    def _class_root(self) -> Path | None:
        """A folder named like train whose sub-folders (the classes) each hold images."""
        holders = Counter(p.parent for p in self.images)
        roots = {d.parent for d in holders if d.parent != d}
        candidates = []
        for root in roots:
            if "train" not in rel(root, self.raw).lower():
                continue
            kids = [k for k in root.iterdir() if k.is_dir() and not k.name.startswith(".")]
            counts = sorted(holders.get(k, 0) for k in kids)
            # A class holds several images; one folder per image names an id, not a class.
            if len(kids) >= 2 and counts[0] and counts[len(counts) // 2] >= 2:
                candidates.append(root)
        candidates.sort(key=lambda r: (len(r.parts), -sum(holders[k] for k in holders if k.parent == r)))
        return candidates[0] if candidates else None

    def _name_labels(self) -> NameLabels | None:
        """Train images named by their class (`cat.0.jpg`) beside test images that are not; the
        sample's ids (its key, else its first column) pick the test folder."""
        sample_ids = None
        if self.sample_df is not None and len(self.sample_df.columns):
            key = self.roles.key if self.roles.key in self.sample_df.columns else self.sample_df.columns[0]
            sample_ids = set(present(self.sample_df[key]))
        found = find_name_labels(self.images, self.raw, sample_ids)
        if found is not None:
            self.notes.append(found.describe(self.raw))
        return found

    def _image_layout(self, id_column: str, train_id: str | None, test_id: str | None) -> ImageLayout | None:
        # Only columns of both train and test are judged: an answer is never read as a picture.
        written = self._cell_layout({id_column, train_id, test_id}) if not self.images and not self.stacks else None
        if written is not None:
            return written
        stacked = self._stack_layout() if self.stacks else None
        if stacked is not None:
            return stacked
        if not self.images:
            return None
        if self.media == "image":
            self._describe_pictures(self.images)
        ext = Counter(p.suffix.lower() for p in self.images).most_common(1)[0][0]
        if len({p.suffix.lower() for p in self.images}) > 1:
            self.notes.append(f"{self.media} files have several extensions; {ext} is the most common")
        if self.class_root is not None:
            return self._class_layout(id_column, ext)
        if self.name_labels is not None:
            return self._name_label_layout(id_column, ext)
        return (self._path_column_layout(ext) or self._stem_column_layout(ext, {id_column, train_id, test_id})
                or self._id_file_layout(id_column, train_id, test_id, ext))

    def _describe_pictures(self, paths: list[Path]) -> None:
        """A note on how the first picture that opens is read (DICOM windowing, 16-bit scaling,
        channels reduced), when it is not a plain 8-bit file."""
        for path in paths[:5]:
            try:
                picture = load_picture(path)
            except (OSError, ValueError):
                continue
            if picture.form != "pil" or picture.notes:
                h, w, c = picture.pixels.shape
                how = "; ".join(picture.notes) or "8-bit"
                kind = picture.form.upper() if picture.form != "pil" else path.suffix.lstrip(".").upper() or "PIL"
                self.notes.append(f"pictures are {kind} ({path.name}: {h}x{w}, {how}); "
                                  f"read as {'RGB' if c == 3 else 'grey'} in 0..1")
            return

    def _stack_layout(self) -> ImageLayout | None:
        """Train and test pictures stacked in arrays, matched to the train table and the test table
        (else the sample) by their count, and by their names where the counts agree."""
        n_train = len(self.train_df) if self.train_df is not None else None
        frame = self.test_df if self.test_df is not None else self.sample_df
        n_test = len(frame) if frame is not None else None

        def pick(n: int | None, word: str, other: str, taken: PictureStack | None = None) -> PictureStack | None:
            fits = [s for s in self.stacks if s.count == n and s is not taken
                    and (other not in s.name.lower() or word in s.name.lower())]
            fits.sort(key=lambda s: word in s.name.lower(), reverse=True)
            return fits[0] if fits else None

        train = pick(n_train, "train", "test")
        test = pick(n_test, "test", "train", taken=train)
        if train is None or test is None:
            self.notes.append("stacked pictures were found but not one array for train and one for test "
                              "matching their rows; they are not used")
            return None
        home = self.raw.parent / "setup" / PICTURES_FOLDER
        dirs = {}
        for split, stack in (("train", train), ("test", test)):
            folder = unpack_stack(stack, home)
            dirs[split] = Path(os.path.relpath(folder, self.raw)).as_posix()
            table = "the sample" if split == "test" and self.test_df is None else f"the {split} table"
            self.notes.append(f"{split} pictures: the {stack.count} pictures stacked in {stack.label(self.raw)}, "
                              f"row i of {table} being picture i; unpacked once into setup/{PICTURES_FOLDER}/"
                              f"{folder.name}/ as one .npy per picture")
        self._describe_pictures([self.raw / dirs["train"] / "0.npy"])
        return ImageLayout(kind="id_files", extension=".npy", train_dir=dirs["train"], test_dir=dirs["test"],
                           stack_dirs=dirs, n_train_images=train.count, n_test_images=test.count)

    def _cell_layout(self, skip: set[str | None]) -> ImageLayout | None:
        """A column of train and test whose cells are pictures written as numbers
        (perception/picture_cells.py): each cell written once as a `.npy` under setup/pictures/,
        the column then no text or table feature."""
        if self.train_df is None or self.test_df is None:
            return None
        found = find_picture_cells(self.train_df, self.test_df, {c for c in skip if c})
        if not found:
            return None
        cells = found[0]
        home = self.raw.parent / "setup" / PICTURES_FOLDER
        dirs = {}
        for split, frame in (("train", self.train_df), ("test", self.test_df)):
            folder, bad = write_picture_cells(frame[cells.column], cells, home, split)
            dirs[split] = Path(os.path.relpath(folder, self.raw)).as_posix()
            if bad:
                self.notes.append(f"{bad} {split} cell(s) of {cells.column!r} hold no such picture: read as black pictures")
        self.notes.append(f"{cells.describe()}; each row's picture written once into setup/{PICTURES_FOLDER}/"
                          f"{Path(dirs['train']).name}/ and {Path(dirs['test']).name}/ as one .npy, "
                          "read as the image input, not as text")
        self.dropped[cells.column] = "pictures written as numbers: used as the image input"
        for other in found[1:]:
            self.notes.append(f"{other.describe()}: only one picture column is used")
            self.dropped[other.column] = "a second column of pictures written as numbers: not used"
        return ImageLayout(kind="id_files", extension=".npy", train_dir=dirs["train"], test_dir=dirs["test"],
                           stack_dirs=dirs, picture_size=(cells.height, cells.width),
                           n_train_images=len(self.train_df), n_test_images=len(self.test_df))

    def _class_layout(self, id_column: str, ext: str) -> ImageLayout:
        root = self.class_root
        assert root is not None
        train_imgs = [p for p in self.images if p.parent.parent == root]
        flat = Counter(p.parent for p in self.images if root not in p.parents)
        tests = sorted((d for d in flat if "test" in rel(d, self.raw).lower()), key=lambda d: -flat[d])
        stems = [p.stem for p in train_imgs]
        if len(set(stems)) < len(stems):
            self.notes.append(f"some training {self.media} names repeat across class folders: ids are not unique")
        with_ext = self._ids_with_extension(id_column)
        self.notes.append(f"labels are the folder names under {rel(root, self.raw)}/; ids are {self.media} file "
                          f"names {'with' if with_ext else 'without'} the extension")
        return ImageLayout(kind="class_folders", train_dir=rel(root, self.raw),
                           test_dir=rel(tests[0], self.raw) if tests else None, extension=ext,
                           ids_include_extension=with_ext, n_train_images=len(train_imgs),
                           n_test_images=flat[tests[0]] if tests else 0)

    def _ids_with_extension(self, id_column: str) -> bool:
        """Whether the sample (else the page's example) spells test ids as file names, extension included."""
        if self.sample_df is not None and id_column in self.sample_df.columns:
            return bool(set(present(self.sample_df[id_column])) & {p.name for p in self.images})
        if self.example_rows:
            shown = [row.get(id_column, "") for row in self.example_rows]
            return all(v.lower().endswith(self.media_suffixes) for v in shown if v) and any(shown)
        return False

    def _name_label_layout(self, id_column: str, ext: str) -> ImageLayout:
        found = self.name_labels
        assert found is not None
        test_dir = found.test_dir
        n_test = sum(p.parent == test_dir for p in self.images) if test_dir else 0
        with_ext = self._ids_with_extension(id_column)
        self.notes.append(f"train {self.media} files are keyed train_0, train_1, ... in name order (a key must not spell "
                          f"the label); test ids are {self.media} file names {'with' if with_ext else 'without'} the extension")
        return ImageLayout(kind="name_labels", train_dir=rel(found.train_dir, self.raw),
                           test_dir=rel(test_dir, self.raw) if test_dir else None, extension=ext,
                           ids_include_extension=with_ext,
                           name_label_pattern=found.pattern, n_train_images=sum(found.counts.values()),
                           n_test_images=n_test)

    def _path_column_layout(self, ext: str) -> ImageLayout | None:
        """A train column whose cells are relative paths of existing image files."""
        if self.train_df is None:
            return None
        for column in self.train_df.columns:
            values = present(self.train_df[column])
            if values.empty or not values.str.lower().str.endswith(self.media_suffixes).mean() >= 0.9:
                continue
            assert self.train_path is not None
            for base in (self.train_path.parent, self.data, self.raw):
                if all((base / v).is_file() for v in values.head(20)):
                    self.dropped[column] = f"{self.media} file paths: used as the {self.media} input"
                    n_test = len(self.test_df) if self.test_df is not None and column in self.test_df else 0
                    return ImageLayout(kind="id_files", extension=ext, path_column=column,
                                       path_base=rel(base, self.raw) if base != self.raw else ".",
                                       n_train_images=len(values), n_test_images=n_test)
        return None

    def _stem_column_layout(self, ext: str, ids: set[str | None]) -> ImageLayout | None:
        """A column of train and test (not the key: a joined table `rec_id,filename`) naming each
        row's file by its stem: the files are named through an id table."""
        if self.train_df is None or self.test_df is None:
            return None
        stems: dict[str, Path] = {}
        for path in self.images:
            stems.setdefault(path.stem, path)
        for column in (c for c in self.train_df.columns if c not in ids and c in self.test_df.columns):
            values = present(self.train_df[column])
            if values.empty or not values.head(20).isin(stems).all() or values.isin(stems).mean() < 0.9 \
                    or present(self.test_df[column]).isin(stems).mean() < 0.9:
                continue
            base = Path(os.path.commonpath([stems[v].parent for v in values if v in stems]))
            joined = [j.file[0] for j in (self.roles.train.joins if self.roles.train else []) if column in j.columns]
            self.dropped[column] = f"{self.media} file names: used as the {self.media} input"
            self.notes.append(f"{self.media} files named through {joined[0] if joined else 'the table'}'s {column!r}: "
                              f"each row's file is the one under {rel(base, self.raw)}/ whose name without "
                              "extension is that cell")
            return ImageLayout(kind="id_files", extension=ext, path_column=column, path_stems=True,
                               path_base=rel(base, self.raw), n_train_images=len(values),
                               n_test_images=len(present(self.test_df[column])))
        return None

    def _id_file_layout(self, id_column: str, train_id: str | None, test_id: str | None,
                        ext: str) -> ImageLayout | None:
        """Folders whose image file names (with or without extension), or whose one-image
        sub-folders, are named by the ids of a table."""
        homes: list[tuple[Path, str, set[str]]] = []  # (folder, how ids are spelled, the names found)
        by_dir: dict[Path, list[Path]] = {}
        for p in self.images:
            by_dir.setdefault(p.parent, []).append(p)
        for d, paths in sorted(by_dir.items(), key=lambda kv: -len(kv[1])):
            homes += [(d, "stem", {p.stem for p in paths}), (d, "name", {p.name for p in paths})]
        per_id: dict[Path, set[str]] = {}
        for d, paths in by_dir.items():
            if len(paths) <= 3 and d.parent != d:
                per_id.setdefault(d.parent, set()).add(d.name)
        homes += [(g, "folder", names) for g, names in sorted(per_id.items(), key=lambda kv: -len(kv[1])) if len(names) > 1]

        def home(ids: set[str], taken: Path | None = None) -> tuple[Path | None, str]:
            fits = [(d, how) for d, how, names in homes if ids and len(ids & names) >= 0.9 * len(ids)]
            # Restarting ids name files in both folders: the test ids' home is the one train does not use.
            fits.sort(key=lambda f: (f[0] != taken, "test" in rel(f[0], self.raw).lower()), reverse=True)
            if fits:
                return fits[0]
            # Spread over several folders (Kaggle splits large test sets): their common parent.
            for how, spell in (("stem", lambda p: p.stem), ("name", lambda p: p.name)):
                matched = [p.parent for p in self.images if spell(p) in ids]
                if ids and len(matched) >= 0.9 * len(ids):
                    return Path(os.path.commonpath(matched)), how
            return None, "stem"

        train_ids = set(present(self.train_df[train_id])) if self.train_df is not None and train_id else set()
        if self.test_df is not None and test_id:
            test_ids = set(present(self.test_df[test_id]))
        elif self.sample_df is not None and id_column in self.sample_df.columns:
            test_ids = set(present(self.sample_df[id_column]))
        else:
            test_ids = set()
        train_dir, train_how = home(train_ids)
        test_dir, test_how = home(test_ids, taken=train_dir)
        if train_dir is None and test_dir is None:
            self.notes.append(f"{len(self.images)} {self.media} files match no ids; they are ignored")
            return None
        n_test = len(test_ids) if test_dir else 0
        if test_dir is None and not test_ids and train_dir is not None:
            # No table lists the test images: they are the other folder spelled like train's.
            others = [(d, names) for d, how, names in homes if how == train_how and d != train_dir
                      and train_dir not in d.parents and d not in train_dir.parents]
            others.sort(key=lambda o: ("test" in rel(o[0], self.raw).lower(), len(o[1])), reverse=True)
            if others:
                test_dir, test_how, n_test = others[0][0], train_how, len(others[0][1])
                self.notes.append(f"test {self.media} files: the {n_test} under {rel(test_dir, self.raw)}/, "
                                  "which no table lists")
        same = train_dir == test_dir or None in (train_dir, test_dir)
        one = train_dir or test_dir
        assert one is not None
        how = train_how if train_dir else test_how
        return ImageLayout(
            kind="id_files", extension=ext, ids_include_extension=how == "name", ids_are_folders=how == "folder",
            image_dir=rel(one, self.raw) if same else None,
            train_dir=None if same or train_dir is None else rel(train_dir, self.raw),
            test_dir=None if same or test_dir is None else rel(test_dir, self.raw),
            n_train_images=len(train_ids) if train_dir else 0, n_test_images=n_test)

