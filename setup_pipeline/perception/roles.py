"""Which table is the sample submission, the test set and the training set, decided by structure.

A Kaggle expert opening a folder asks: which file has one row per thing to predict and a
placeholder answer (the sample)? Which table holds those keys (test)? Which table has the same
features plus the answers (train), or the answers in a file of their own (`y_train`, `*_labels`)?
Which tables add columns to both, matched by a key? Names only break ties.

Every decision is recorded as an evidence line, so the run can say how it read the folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from setup_pipeline.perception.catalogue import Catalogue
from setup_pipeline.perception.composed_keys import composed_for, find_composed_keys
from setup_pipeline.perception.echo import echoed_by_example, echoed_by_sample
from setup_pipeline.perception.lookup_table import LookupTable, find_lookup
from setup_pipeline.perception.packed_ids import find_packed
from setup_pipeline.perception.recipe import Join, TableRecipe, assemble
from setup_pipeline.perception.relations import find_side_joins
from setup_pipeline.perception.feature_tables import FeatureTables
from setup_pipeline.perception.tables import (
    MATCH, Logical, agrees, blank_for, is_constant, is_unique, keys_agree, match_column, overlap,
)

_SAMPLE_WORDS = ("sample", "submission", "submit", "example", "template")
_TEST_WORDS = ("test", "score", "predict", "eval", "holdout", "unlabel")
_TRAIN_WORDS = ("train", "label", "learn", "fit")


@dataclass
class Roles:
    train: TableRecipe | None = None
    test: TableRecipe | None = None
    train_frame: pd.DataFrame | None = None
    test_frame: pd.DataFrame | None = None
    sample: str | None = None  # relative to raw/
    sample_frame: pd.DataFrame | None = None
    key: str | None = None  # the submission's key column (sample's, or the description's)
    test_key: str | None = None  # test column holding the key; None: rows matched by order
    train_key: str | None = None
    echo: dict[str, str] = field(default_factory=dict)  # submission column -> test column it repeats
    header: list[str] | None = None  # the submission's columns, in order
    # A long submission: the sample's rows name (test row, target) pairs through this table, and
    # `header` is the wide one the setup predicts (the test key, then the targets).
    lookup: LookupTable | None = None
    evidence: list[str] = field(default_factory=list)

    @property
    def prediction_columns(self) -> list[str]:
        return [c for c in (self.header or []) if c != self.key and c not in self.echo]


class _Decider(FeatureTables):
    def __init__(self, catalogue: Catalogue, header_hint: list[str] | None,
                 example_rows: list[dict[str, str]] | None = None, page: str = "") -> None:
        super().__init__(catalogue)
        self.tables, self.composed, composed_evidence = find_composed_keys(self.tables)
        self.example_rows = example_rows or []
        self.page = page
        self.header_hint = header_hint
        self.roles = Roles(evidence=composed_evidence)

    def say(self, line: str) -> None:
        self.roles.evidence.append(line)

    # ------------------------------------------------------------ the sample submission

    def sample_score(self, table: Logical) -> int:
        others = [t for t in self.tables if t is not table]
        score = 2 if table.shows(_SAMPLE_WORDS) else 1 if table.shows(("format",)) else 0
        if score == 0 and len(table.columns) > 2 and self._answers_vary(table):
            # A key (2) and constant answers (1) make 3 at most, and the answers vary: no sample,
            # whatever its key, which is not looked for (on a wide table, the search costs most).
            return score - 2
        match = self.key_match(table, others)
        key = match[0] if match is not None else self.image_key(table) or self.row_numbers(table, others)
        if key is None and find_packed(table, table.columns[0], others) is not None:
            key = table.columns[0]  # ids packing (test row, class): packed_ids.py
        if key is not None:
            score += 2
        rest = [c for c in table.columns if c != key]
        if rest and all(is_constant(table.frame, c) for c in rest):
            score += 1
        if len(table.columns) > 2 and not table.shows(_SAMPLE_WORDS) and key is None:
            score -= 2
        return score

    def _answers_vary(self, table: Logical) -> bool:
        """Two columns or more hold several values: whichever is the key, the rest is no constant
        placeholder (settled by the first two such columns, not a pass over every column)."""
        varied = (c for c in table.columns if not is_constant(table.frame, c))
        return next(varied, None) is not None and next(varied, None) is not None

    def pick_sample(self) -> Logical | None:
        scored = [(self.sample_score(t), t.shows(("sample",)), -len(t.columns), t) for t in self.tables]
        scored = [s for s in scored if s[0] >= 3]
        if not scored:
            return None
        scored.sort(key=lambda s: s[:3], reverse=True)
        sample = scored[0][3]
        if len(sample.files) > 1:
            return None  # a sample is one file; parts are data
        self.say(f"sample submission: {sample.files[0]} (score {scored[0][0]}: "
                 f"{'named like one, ' if sample.shows(_SAMPLE_WORDS) else ''}keys found in another table)")
        return sample

    # ------------------------------------------------------------ the test table

    def pick_test(self, sample: Logical | None, rest: list[Logical]) -> tuple[Logical | None, str | None]:
        """The table of rows to predict and its key column (None: rows matched by order)."""
        if sample is not None:
            match = self.key_match(sample, rest)
            # No column shares its values with a table: a column counting the rows is the key (the
            # prediction may come first), the rows following test's order.
            key = match[0] if match else self.image_key(sample) or self.row_numbers(sample, rest)
            candidates = []
            if key is not None:
                keys = self.values(sample, key)
                prediction = [c for c in sample.columns if c != key]
                least = MATCH * len(self.distinct(sample, key))  # what can_agree asks of a column at least
                for table in [t for t in rest if not self.labels_every_row(t, prediction)]:
                    for column in self.columns_with(table, keys, least):
                        if not self.can_agree(sample, key, table, column):
                            continue
                        share = self.share(sample, key, table, column)
                        if keys_agree(key, column, share):
                            candidates.append((table, column, share))
            self.roles.key = key or sample.columns[0]
            self.roles.header = sample.columns
            if candidates:
                def answers(c: tuple[Logical, str, float]) -> int:
                    """Sample columns this table fills with other values than the sample's: the
                    answers of training rows (restarting ids match train too). Echoes agree."""
                    table, column, _ = c
                    return sum(1 for p in prediction if p in table.column_set and not blank_for(table, column, keys, p)
                               and not agrees(sample, key, table, column, p))

                def rank(c: tuple[Logical, str, float]) -> tuple:
                    table, column, share = c
                    return (-answers(c), round(share, 2), -abs(len(table.frame) - len(sample.frame)), table.shows(_TEST_WORDS))
                candidates.sort(key=rank, reverse=True)
                if answers(candidates[0]):
                    candidates = []
            if candidates:
                table, column, _ = candidates[0]
                self.say(f"test rows: {' + '.join(table.files)}, matched to the sample by {column!r}")
                return table, column
            same_rows = [t for t in rest if len(t.frame) == len(sample.frame)]
            same_rows.sort(key=lambda t: t.shows(_TEST_WORDS), reverse=True)
            if same_rows:
                self.say(f"test rows: {' + '.join(same_rows[0].files)}, matched to the sample by row order "
                         f"(no column holds the sample's {self.roles.key!r} values)")
                return same_rows[0], None
            return None, None
        header = self.header_hint
        if header:
            self.roles.header = [c for c in header if c != "..."] if header[-1] != "..." else header
            key = self._header_key(header, rest)
            self.roles.key = key
            with_key = [t for t in rest if match_column(t.columns, key)]
            answers = [c for c in header if c not in (key, "...")]
            # The rows to predict: a table without the answer columns, or one leaving them blank.
            pool = [t for t in with_key if (not all(match_column(t.columns, a) for a in answers)
                                            and not self.labels_every_row(t, answers))
                    or any(blank_for(t, "", set(), a) for a in answers if a in t.columns)]
            pool.sort(key=lambda t: (t.shows(_TEST_WORDS), -len(t.frame)), reverse=True)
            if pool:
                table = pool[0]
                self.say(f"test rows: {' + '.join(table.files)}, the table with the submission's key "
                         f"{key!r} and no answers")
                return table, match_column(table.columns, key)
        # No key to follow: test is the table whose columns another table extends, or, when the
        # answers sit in a file of their own (X_train, y_train, X_test), the one of two alike
        # tables named like test.
        pairs = []
        for table in rest:
            for other in rest:
                mine, theirs = set(table.columns), set(other.columns)
                alike = mine == theirs and table.shows(_TEST_WORDS) and not other.shows(_TEST_WORDS)
                if other is not table and (mine < theirs or alike):
                    pairs.append((mine < theirs, table.shows(_TEST_WORDS), len(table.columns), table))
        if pairs:
            pairs.sort(key=lambda p: p[:3], reverse=True)
            table = pairs[0][3]
            self.say(f"test rows: {' + '.join(table.files)}, the table of inputs without answers")
            return table, None
        return None, None

    def lookup(self, sample: Logical | None, rest: list[Logical]) -> tuple[Logical, Logical, Logical] | None:
        """A long sample mapped through a lookup table (lookup_table.py): the roles become those of
        a wide submission keyed by the test table's key; returns (lookup, test, train) tables."""
        if sample is None or len(sample.columns) < 2:
            return None
        found = find_lookup(sample, sample.columns[0], rest)
        if found is None:
            packed = find_packed(sample, sample.columns[0], rest)
            # Ids packing (test row, class): the sample is its own lookup, test and train one table.
            found = None if packed is None else (packed[0], sample, packed[1], packed[1])
        if found is None:
            return None
        spec, lookup, test, train = found
        roles = self.roles
        roles.lookup, roles.key, roles.test_key = spec, spec.test_key, spec.test_key
        roles.header = [spec.test_key, *spec.targets]
        self.say(spec.describe(sample.files[0], sample.columns[1]))
        self.say(f"test rows: {' + '.join(test.files)}, named by the lookup's {spec.entity!r}")
        return lookup, test, train

    # ------------------------------------------------------------ the training table

    def pick_train(self, test: Logical | None, test_key: str | None, rest: list[Logical]) -> Logical | None:
        if test is None:
            # A table of labels alone is training data when stacked pictures are its inputs.
            pool = [t for t in rest if (len(t.columns) >= 2 or self.beside_stack(t))
                    and (not self.image_names or self.image_key(t))]
            pool.sort(key=lambda t: (t.shows(_TRAIN_WORDS), len(t.frame)), reverse=True)
            return pool[0] if pool else None
        # When the key is test's only column (a sentence keyed by itself), the key is the input:
        # the table holding it is train's features, not a table of answers alone (y_train).
        features = [c for c in test.columns if c != test_key] or list(test.columns)
        def rank(table: Logical) -> tuple:
            shared = sum(1 for c in features if c in table.column_set)
            extra = len(table.column_set - test.column_set)
            keyed = bool(test_key and match_column(table.columns, test_key))
            return (shared, extra > 0, keyed, table.shows(_TRAIN_WORDS), len(table.frame))
        pool = sorted(rest, key=rank, reverse=True)
        if not pool:
            return None
        best = pool[0]
        if features and not any(c in best.column_set for c in features) and not (test_key and match_column(best.columns, test_key)):
            return None
        return best

    def answers_beside(self, train: Logical, test: Logical | None, train_key: str | None,
                       rest: list[Logical]) -> tuple[Logical, str | None, str | None] | None:
        """A table holding the training answers apart from the features: joined on the key, or row-aligned."""
        test_columns = set(test.columns) if test is not None else set()
        for table in rest:
            own = [c for c in table.columns if c not in test_columns and c not in train.column_set]
            if not own:
                continue
            if train_key is not None:
                for column in table.columns:
                    if overlap(self.values(train, train_key), self.values(table, column)) >= MATCH and is_unique(table.frame, column):
                        return table, column, train_key
            if len(table.frame) == len(train.frame):
                return table, None, None
        return None

    # ------------------------------------------------------------ all together

    def run(self) -> Roles:
        roles = self.roles
        sample = self.pick_sample()
        rest = [t for t in self.tables if t is not sample]
        if sample is not None:
            roles.sample = sample.files[0]
            roles.sample_frame = sample.frame
        found = self.lookup(sample, rest)
        named_train = None  # the table whose columns a lookup names
        if found is not None:
            lookup, test, named_train = found
            rest = [t for t in rest if t is not lookup]
            sample = None  # the sample's rows are pairs, not test rows: nothing of test is echoed
            test_key = roles.test_key
        else:
            test, test_key = self.pick_test(sample, rest)
        roles.test_key = test_key
        targets = self.blank_targets(test, test_key, sample)
        if targets:
            roles.test = TableRecipe(files=test.files, rows="target_blank", target_columns=targets)
            roles.train = TableRecipe(files=test.files, rows="target_present", target_columns=targets)
            roles.train_key = test_key
            self.say(f"one file holds train and test: {test.files[0]}; rows with a blank {targets[0]!r} are to predict")
            keys = [c for c in test.columns if c != test_key and c not in targets]
            # Judged as two row sets, the answered and the blank, as the files of other layouts.
            blank = test.frame[targets].apply(lambda c: c.astype(str).str.strip() == "").all(axis=1)
            others = self.join_feature_tables(test, test, test_key, test_key, [t for t in rest if t is not test])
            self.side_tables(test.frame[~blank], test.frame[blank], keys, others, targets)
            # The rows to predict, without their blank answers, are the test rows a sample echoes.
            return self._finish(test, test, sample, test_key)
        others = [t for t in rest if t is not test]
        train = named_train or self.pick_train(test, test_key, others)
        if test is not None:
            roles.test = TableRecipe(files=test.files)
        if train is None:
            return self._finish(None, test, sample, test_key)
        roles.train = TableRecipe(files=train.files)
        self.say(f"training rows: {' + '.join(train.files)}")
        others = [t for t in others if t is not train]
        train_key = match_column(train.columns, test_key) if test_key else None
        if train_key is None and roles.key:
            train_key = match_column(train.columns, roles.key)
        if train_key is None and test is None:
            # Test rows are files (images, clips) and train names its own by another column
            # (`clip_name` beside a sample's `clip`): the column naming the files is train's key.
            train_key = self.image_key(train)
        roles.train_key = train_key
        targets_here = [c for c in train.columns if test is None or c not in test.column_set]
        if not [c for c in targets_here if c != train_key]:
            beside = self.answers_beside(train, test, train_key, others)
            if beside is not None:
                table, their_key, our_key = beside
                columns = [c for c in table.columns if c != their_key and c not in train.column_set]
                if their_key is not None and our_key is not None:
                    roles.train.joins.append(Join(file=table.files, on=our_key, other_on=their_key, columns=columns))
                    self.say(f"training answers: {' + '.join(table.files)}, joined on {our_key!r}")
                else:
                    roles.train.beside, roles.train.beside_columns = table.files, columns
                    self.say(f"training answers: {' + '.join(table.files)}, row by row beside the features")
                others = [t for t in others if t is not table]
        others = self.join_feature_tables(train, test, train_key, test_key, others)
        if test is not None:
            keys = [c for c in train.columns if c in test.column_set and c not in (train_key, test_key)]
            self.side_tables(train.frame, test.frame, keys, others, [c for c in targets_here if c != train_key])
        return self._finish(train, test, sample, test_key)

    def side_tables(self, train: pd.DataFrame, test: pd.DataFrame | None, keys: list[str],
                    tables: list[Logical], targets: list[str]) -> None:
        """Join the tables keyed by other columns of the main table (a store, a store and a date),
        the same joins on train and test rows. A table with every main column is another copy of
        the main table (more rows), not a side table. `targets`: the train columns a joined column
        must not give away (relations.py's leak guard)."""
        main = set(keys)
        tables = [t for t in tables if not main <= t.column_set and len(t.columns) >= 2]
        for found in find_side_joins(train, test, keys, tables, self.page, targets):
            self.say(found.evidence)
            if found.join is None:
                continue
            self.roles.train.joins.append(found.join)
            if self.roles.test is not None:
                self.roles.test.joins.append(found.join.model_copy())

    def _finish(self, train: Logical | None, test: Logical | None, sample: Logical | None,
                test_key: str | None) -> Roles:
        """Assemble the frames, then find the echoed columns in the test rows as assembled (a
        repeated column may come from a joined feature table)."""
        self._frames(train, test)
        roles = self.roles
        if test is not None and roles.test_frame is not None:
            assembled = Logical(test.files, roles.test_frame)
            if sample is not None:
                roles.echo.update(echoed_by_sample(sample, assembled, roles.key, test_key))
            elif roles.header:
                roles.echo = echoed_by_example(roles.header, roles.key, assembled)
            if roles.echo:
                self.say(f"echoed test columns in the submission: {', '.join(roles.echo)}")
        return roles

    def _header_key(self, header: list[str], tables: list[Logical]) -> str:
        """The example's key: its first column that is unique in a table (a prediction may come first)."""
        named = [c for c in header if c != "..."]
        for column in named:
            for table in tables:
                found = match_column(table.columns, column)
                if found and is_unique(table.frame, found):
                    return column
        # A key in no table numbers the rows (the answers are train columns).
        absent = [c for c in named if not any(match_column(t.columns, c) for t in tables)]
        if len(absent) == 1 and len(named) > 1:
            return absent[0]
        return header[0]

    def blank_targets(self, test: Logical | None, test_key: str | None, sample: Logical | None) -> list[str]:
        """Columns of the test table left blank exactly on the rows to predict: one file holds train
        and test, and these are the answers to fill in."""
        if test is None:
            return []
        names = [c for c in (self.roles.header or []) if c != self.roles.key and c != "..."]
        named = [c for c in names if c in test.column_set]
        if sample is not None and test_key is not None:
            rows = self.stripped_in(test, test_key, sample, self.roles.key)
            if rows.all() or not rows.any():
                return []
            blank = []
            for column in [c for c in test.columns if c != test_key]:
                cells = test.frame[column].astype(str).str.strip().to_numpy() == ""
                if cells[rows].all() and not cells[~rows].any():
                    blank.append(column)
            return [c for c in named if c in blank] or blank
        if sample is not None:
            # Matched to the sample row by row, test holds only rows to predict: a blank cell
            # there is a missing input (an echoed column with gaps), not an answer to fill in.
            return []
        if named and any(match_column(test.columns, c) is None for c in names):
            # Some predicted column is not in this table: it holds no answers, and the submission's
            # columns it has are echoed inputs (blank where a value is missing).
            return []
        blank = [c for c in named if blank_for(test, "", set(), c)]
        if names and not named:
            # One probability column per class: the answer is the column whose labels are those classes.
            return [c for c in test.columns if blank_for(test, "", set(), c) and self.labels(test, c, names)][:1]
        # Example rows show a placeholder answer (the same value on every row) and varied inputs.
        shown = [c for c in blank if len(self.example_rows) >= 2 and len({r.get(c) for r in self.example_rows}) == 1]
        return shown or blank

    def _frames(self, train: Logical | None, test: Logical | None) -> None:
        loaded = {t.path.as_posix(): t.frame for t in self.catalogue.tables}
        raw = self.catalogue.raw
        for recipe in (self.roles.train, self.roles.test):
            if recipe is not None and recipe.files[0] in loaded:
                recipe.composed_key = composed_for(list(loaded[recipe.files[0]].columns), self.composed)
        self.roles.train_frame = assemble(raw, self.roles.train, loaded) if self.roles.train else None
        self.roles.test_frame = assemble(raw, self.roles.test, loaded) if self.roles.test else None
        if self.roles.test is not None and self.roles.test.rows == "target_blank":
            # The blank answers of the rows to predict are not inputs.
            self.roles.test_frame = self.roles.test_frame.drop(columns=self.roles.test.target_columns)


def decide_roles(catalogue: Catalogue, header_hint: list[str] | None,
                 example_rows: list[dict[str, str]] | None = None, page: str = "") -> Roles:
    """Roles of the catalogue's tables; `header_hint` and `example_rows` are the description's
    submission example (its header and rows), if any; `page` the description, whose words may
    vouch for a side table's link (the content still decides)."""
    return _Decider(catalogue, header_hint, example_rows, page).run()
