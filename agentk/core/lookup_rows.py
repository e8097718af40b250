"""A long submission written from wide predictions through a lookup table: each submission row is
one (test entity, target) pair the lookup lists under the row's id (facial keypoints'
`RowId -> ImageId, FeatureName`), or that the id packs as entity * M + class (`packed_pairs`). Imported by generated setup code and by the meta checks, so both
read the lookup one way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentk.core.maps import id_text


def listed_pairs(lookup: pd.DataFrame, ids: pd.Series, key: str, entity: str, name: str) -> pd.DataFrame:
    """The (entity, name) pair of each id, in the ids' order; ValueError naming an id the lookup lacks."""
    table = lookup.assign(**{key: id_text(lookup[key].astype(str)).to_numpy()}).drop_duplicates(key).set_index(key)
    wanted = id_text(ids.astype(str))
    rows = table.index.get_indexer(wanted)
    if (rows < 0).any():
        raise ValueError(f"{int((rows < 0).sum())} submission id(s) are not in the lookup table, e.g. {wanted[rows < 0].iloc[0]!r}")
    return pd.DataFrame({"entity": id_text(table[entity].iloc[rows].astype(str)).to_numpy(),
                         "name": table[name].iloc[rows].astype(str).str.strip().to_numpy()})


def packed_pairs(ids: pd.Series, modulus: int) -> pd.DataFrame:
    """The (entity, name) pair of each id packed as entity * modulus + class, the class as text
    (`1403` by 100 is entity "14", name "3"); ValueError naming an id that is no whole number."""
    text = ids.astype(str).str.strip()
    bad = ~text.str.fullmatch(r"\d+")
    if bad.any():
        raise ValueError(f"{int(bad.sum())} submission id(s) are not whole numbers packing (row, class), e.g. {text[bad].iloc[0]!r}")
    numbers = text.astype("int64")
    return pd.DataFrame({"entity": (numbers // modulus).astype(str).to_numpy(),
                         "name": (numbers % modulus).astype(str).to_numpy()})


def through_lookup(wide: pd.DataFrame, pairs: pd.DataFrame) -> np.ndarray:
    """The wide frame's (`id` + one column per name) value of each pair; ValueError naming an entity
    without a prediction or a name without a column."""
    frame = wide.assign(id=id_text(wide["id"].astype(str))).drop_duplicates("id").set_index("id")
    rows = frame.index.get_indexer(pairs["entity"])
    columns = pd.Index([str(c) for c in frame.columns]).get_indexer(pairs["name"])
    if (rows < 0).any():
        raise ValueError(f"{int((rows < 0).sum())} listed pair(s) name a test row without a prediction, "
                         f"e.g. {pairs['entity'][rows < 0].iloc[0]!r}")
    if (columns < 0).any():
        raise ValueError(f"{int((columns < 0).sum())} listed pair(s) name no predicted column, "
                         f"e.g. {pairs['name'][columns < 0].iloc[0]!r}")
    return frame.to_numpy(dtype=object)[rows, columns]
