"""The submission code of a long submission mapped through a lookup table
(perception/lookup_table.py): the solver predicts one row per test entity and one column per
target; the submission lists only the (entity, target) pairs the lookup names under the sample's
ids, in the sample's order, each pair's value in the sample's value column."""

from __future__ import annotations

from setup_pipeline.expert.facts import DataFacts


def submission_format(facts: DataFacts, sources: dict[str, str]) -> str:
    """`sources` maps each target (a name the lookup uses) to its prediction-frame column."""
    lookup = facts.lookup
    assert lookup is not None and facts.sample_submission is not None
    if lookup.packed is not None:
        return _packed(facts, sources)
    id_column, value = facts.submission_columns[0], facts.submission_columns[-1]
    return (
        "from agentk.core.lookup_rows import listed_pairs, through_lookup\n"
        "from agentk.core.readers import read_table\n\n"
        f"SAMPLE = {facts.sample_submission!r}  # its rows, in its order, are the pairs scored\n"
        f"ID_COLUMN = {id_column!r}\n"
        f"VALUE = {value!r}\n"
        f"LOOKUP = {lookup.file!r}\n"
        f"KEY, ENTITY, NAME = {lookup.key!r}, {lookup.entity!r}, {lookup.name!r}  # the lookup's columns\n"
        f"SOURCES = {sources!r}  # target (as the lookup names it) -> prediction frame column\n\n\n"
        "def format_submission(pred: pd.DataFrame) -> pd.DataFrame:\n"
        "    wide = pd.DataFrame({'id': pred['id'].to_numpy()})\n"
        "    for name, source in SOURCES.items():\n"
        "        wide[name] = pred[source].to_numpy()\n"
        "    written = read_table(RAW / SAMPLE)[ID_COLUMN].astype(str).str.strip()\n"
        "    pairs = listed_pairs(read_table(RAW / LOOKUP), written, KEY, ENTITY, NAME)\n"
        "    return pd.DataFrame({ID_COLUMN: written.to_numpy(), VALUE: through_lookup(wide, pairs)})\n"
    )


def _packed(facts: DataFacts, sources: dict[str, str]) -> str:
    """Ids packing (test row, class) as row * M + class: the pairs are computed, not looked up; a
    class no training row holds (no target column) is predicted 0."""
    lookup = facts.lookup
    assert lookup is not None and lookup.packed is not None
    id_column, value = facts.submission_columns[0], facts.submission_columns[-1]
    by_class = {name: sources[column] for name, column in lookup.classes.items() if column in sources}
    return (
        "from agentk.core.lookup_rows import packed_pairs, through_lookup\n"
        "from agentk.core.readers import read_table\n\n"
        f"SAMPLE = {facts.sample_submission!r}  # its rows, in its order, are the pairs scored\n"
        f"ID_COLUMN = {id_column!r}\n"
        f"VALUE = {value!r}\n"
        f"MODULUS = {lookup.packed!r}  # each id is test row * MODULUS + class\n"
        f"SOURCES = {by_class!r}  # class (as text) -> prediction frame column\n\n\n"
        "def format_submission(pred: pd.DataFrame) -> pd.DataFrame:\n"
        "    written = read_table(RAW / SAMPLE)[ID_COLUMN].astype(str).str.strip()\n"
        "    pairs = packed_pairs(written, MODULUS)\n"
        "    wide = pd.DataFrame({'id': pred['id'].to_numpy()})\n"
        "    for name in pairs['name'].unique():\n"
        "        wide[name] = pred[SOURCES[name]].to_numpy() if name in SOURCES else 0.0  # unseen in training\n"
        "    return pd.DataFrame({ID_COLUMN: written.to_numpy(), VALUE: through_lookup(wide, pairs)})\n"
    )
