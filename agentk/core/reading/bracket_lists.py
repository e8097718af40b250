"""Tables whose header ends in one bracketed field standing for a list: `rec_id,[labels]` or
`rec_id,[histogram of segment features]`, each row an id (or a few plain fields) and then the list,
as many fields as it holds. Such a file has more (or a varying number of) fields per row than its
header names, so no delimiter sniffs it and no CSV parser reads it; this reads it as the table it is.

- every row's list the same length (a feature vector): one column per place, `<name>_0`, `<name>_1`...
- lengths that vary, every item a small whole number (a list of class indices, `12,3,11`): one 0/1
  column per class, `<name>_<class>` for classes 0 .. the largest listed; a row with no items has
  none of them (all 0);
- a list that is just `?` is hidden (the test rows of a labels file): its cells are blank, the
  convention for answers to predict.

Plain fields before the list keep their names (brackets stripped: `[segment_id]`).
"""

from __future__ import annotations

import csv
import io
import re

import pandas as pd

HIDDEN = "?"
READ_AS = "bracket_list"  # frame.attrs key: how the list was read, one line for the notes
_MOST_CLASSES = 1000  # larger indices are numbers, not classes


def _field_name(field: str) -> str:
    return field.strip().removeprefix("[").removesuffix("]").strip()


def _list_name(field: str) -> str:
    return re.sub(r"\W+", "_", _field_name(field)).strip("_").lower() or "value"


def _trimmed(fields: list[str]) -> list[str]:
    """Without trailing empty fields (`0,3,11,`: a writer ending every field with a comma)."""
    while fields and not fields[-1].strip():
        fields = fields[:-1]
    return fields


def bracketed_header(first_line: str) -> list[str] | None:
    """The header's fields when its last one is bracketed (`[labels]`) and another comes before it."""
    fields = _trimmed(next(csv.reader(io.StringIO(first_line)), []))
    last = fields[-1].strip() if fields else ""
    return fields if len(fields) >= 2 and last.startswith("[") and last.endswith("]") else None


def looks_bracketed(text: str) -> bool:
    """A bracketed header followed by rows: worth reading with read_bracket_lists."""
    first, _, rest = text.partition("\n")
    return bracketed_header(first.rstrip("\r")) is not None and bool(rest.strip())


def _is_class(cell: str) -> bool:
    return cell.isdigit() and int(cell) < _MOST_CLASSES


def read_bracket_lists(text: str) -> pd.DataFrame | None:
    """The table `text` holds, its list spread into columns (module docstring); None when the header
    is not bracketed or every row has exactly the header's fields (a plain table, read as one)."""
    first = text.split("\n", 1)[0].rstrip("\r")
    header = bracketed_header(first)
    if header is None:
        return None
    written = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    if len(written) < 2 or all(len(r) == len(written[0]) for r in written[1:]):
        return None  # as wide as its header everywhere: a plain table
    rows = [_trimmed(r) for r in written[1:]]
    fixed = len(header) - 1
    if any(len(r) < fixed for r in rows):
        return None
    plain = {_field_name(h): [r[i].strip() for r in rows] for i, h in enumerate(header[:fixed])}
    lists = [[c.strip() for c in r[fixed:]] for r in rows]
    name = _list_name(header[-1])
    hidden = [items == [HIDDEN] for items in lists]
    shown = [items for items, h in zip(lists, hidden) if not h]
    lengths = {len(items) for items in shown}
    if len(lengths) > 1 and all(_is_class(c) for items in shown for c in items):
        n_classes = 1 + max((int(c) for items in shown for c in items), default=0)
        sets = [set() if h else {int(c) for c in items} for items, h in zip(lists, hidden)]
        columns = {f"{name}_{k}": ["" if h else "1" if k in s else "0" for s, h in zip(sets, hidden)]
                   for k in range(n_classes)}
        how = (f"labels as lists of class indices under {header[-1].strip()!r}: one 0/1 column per class "
               f"({name}_0..{name}_{n_classes - 1}), {sum(hidden)} row(s) marked {HIDDEN!r} (labels hidden: "
               "blank, to predict), rows listing none all 0")
    else:
        width = max(len(items) for items in lists)
        columns = {f"{name}_{k}": ["" if h or k >= len(items) or items[k] == HIDDEN else items[k]
                                   for items, h in zip(lists, hidden)] for k in range(width)}
        how = f"a list of {width} values per row under {header[-1].strip()!r}: columns {name}_0..{name}_{width - 1}"
    frame = pd.DataFrame({**plain, **columns}, dtype=object)
    frame.attrs[READ_AS] = how
    return frame
