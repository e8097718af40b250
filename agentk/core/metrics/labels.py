"""Normalisation of labels and ids, so that a submission's spelling of a value matches the answers'."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd


_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")


def _number_key(value: float) -> str:
    # Integral numbers compare as integers so 1, 1.0 and "1.0" are one label.
    return str(int(value)) if value.is_integer() else repr(value)


def _normalise_label(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return _number_key(float(value))
    text = str(value).strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered
    if _INT_RE.fullmatch(text):
        return str(int(text))  # exact even beyond float precision
    if _FLOAT_RE.fullmatch(text):
        return _number_key(float(text))
    if not text:
        raise ValueError("labels contain an empty value")
    # Other strings keep their case: Kaggle compares class names exactly ("EAP" is not "eap").
    return text


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def normalise_labels(values: Any) -> np.ndarray:
    """Map labels to canonical strings: booleans to "true"/"false", integral numbers to "1", ...

    Raises ValueError on missing values: a label metric cannot score a blank.
    """
    array = np.asarray(values)
    items = array.ravel()
    if _one_kind(items):
        # Each distinct value normalised once (a million rows of two classes: two calls, not a
        # million); one kind of value only, so 1 and True never share a distinct value.
        codes, uniques = pd.factorize(items, use_na_sentinel=True)
        if (codes < 0).any():
            raise ValueError("labels contain missing values")
        return np.array([_normalise_label(u) for u in uniques] + [""], dtype=object)[codes]
    items = np.asarray(values, dtype=object).ravel()
    cache: dict[tuple[type, Any], str] = {}
    out = np.empty(len(items), dtype=object)
    for i, value in enumerate(items):
        if _missing(value):
            raise ValueError("labels contain missing values")
        key = (type(value), value)  # the type keeps True and 1 apart as dict keys
        if key not in cache:
            cache[key] = _normalise_label(value)
        out[i] = cache[key]
    return out


def _one_kind(items: np.ndarray) -> bool:
    """Integers, floats or booleans in a numpy array, or nothing but Python strings."""
    if items.dtype.kind in "iufb":
        return True
    return items.dtype.kind == "O" and pd.api.types.infer_dtype(items, skipna=False) == "string"


def normalise_ids(values: Any) -> np.ndarray:
    """Ids as comparable strings: 892, 892.0 and " 892" agree; "0013_01" keeps its zeros."""
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.StringDtype) and not values.isna().any():
        # Arrow-backed text (a per-pixel file's millions of ids) is stripped by Arrow, not in Python.
        return values.str.strip().to_numpy(dtype=object)
    items = np.asarray(values).ravel()
    # The common kinds at once (a million ids): integers as their digits, strings stripped.
    if items.dtype.kind in "iu":
        return items.astype(str).astype(object)
    if items.dtype.kind == "O" and pd.api.types.infer_dtype(items, skipna=False) == "string":
        return pd.Series(items, dtype=object).str.strip().to_numpy(dtype=object)
    out = []
    for value in np.asarray(values, dtype=object).ravel():
        if _missing(value):
            raise ValueError("ids contain missing values")
        if isinstance(value, (bool, np.bool_)):
            out.append(str(bool(value)))
        elif isinstance(value, (int, np.integer)):
            out.append(str(int(value)))
        elif isinstance(value, (float, np.floating)):
            out.append(_number_key(float(value)))
        else:
            out.append(str(value).strip())
    return np.array(out, dtype=object)



def label_list(value: Any) -> list[str]:
    """One row of a ranking submission as normalised labels, in the order given.

    A space-separated string, a sequence, or a single number; a blank or missing value is the
    empty list (Kaggle lets a row predict nothing).
    """
    if isinstance(value, (list, tuple, np.ndarray, pd.Series)):
        return [_normalise_label(v) for v in value if not _missing(v) and str(v).strip()]
    if _missing(value):
        return []
    if isinstance(value, str):
        return [_normalise_label(token) for token in value.split()]
    return [_normalise_label(value)]
