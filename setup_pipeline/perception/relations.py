"""Side tables a Kaggle expert would join to the training and test rows, found from content.

Opening Rossmann, a person sees `store.csv` holds one row per value of train's `Store`; in Favorita,
`oil.csv` one per `date` and `transactions.csv` one per (`date`, `store_nbr`); in Home Credit,
`bureau.csv` several rows per customer. The search asks the same of every table that is not the
training, test, sample or answers table: which columns of the main table (in train and test alike),
alone or two together, have their values found in the side table, for how many rows, and is the
side table one row per key (joined column-wise) or several (summarised per key)?

A key is accepted when it matches at least half the train rows and half the test rows, and the
side table's own keys mostly occur in the main table (a day-of-week column is not a key into a
table of week numbers). Under two different names, whole numbers must also agree closely (a count
is not a store number). A page saying a file is linked ("store.csv can be joined on Store") lowers
the bar, never replaces it: the key must still be found in the content. Single keys come before pairs, one row per key before several. Cost is
bounded: the main table is sampled, only columns that can be keys (whole numbers, short codes,
timestamps) are compared, and pairs are built only from columns that already match alone.

A table keyed by a column only a side table holds (Instacart: train's `order_id` finds `orders.csv`,
whose `user_id` finds `users.csv`) is reached through that one-to-one table, two hops at most: its
join keys on the column the first join brought (`orders__user_id`) and comes after it. A joined
column that gives the answer away (leaks.py) is left out, and a table with nothing else, whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations
from pathlib import PurePosixPath

import pandas as pd

from setup_pipeline.perception.keys import KeyForm, KeyKind, common_form, key_kind, normalise_key, only_days
from setup_pipeline.perception.leaks import leaking
from setup_pipeline.perception.recipe import Join, join_table
from setup_pipeline.perception.tables import Logical

MIN_MATCH = 0.5  # share of main rows whose key the side table must hold
MIN_SIDE_FOUND = 0.5  # share of the side table's keys found in the main table
STRICT = 0.9  # both shares, for whole numbers under two names
HINTED = 0.25  # both shares, for a table the page says is linked
_MAIN_SAMPLE = 20_000
_SIDE_ROWS = 2_000_000  # a side table's keys are read whole up to here
_PAIR_CANDIDATES = 6  # single matches a pair may be built from
_MAX_COLUMNS = 300  # columns of one table judged as keys: keys sit among the first columns of a wide table
_LINKED = re.compile(r"\b(join|joined|joins|link|linked|links|merge|merged|keyed|foreign key|matched)\b", re.IGNORECASE)


@dataclass
class _Column:
    """A column that can be a key, with what the comparisons ask of it."""

    table: Logical
    name: str
    kind: KeyKind
    days: bool  # a timestamp column holding dates only


@dataclass
class SideJoin:
    """A found join and the line saying how it was found."""

    table: Logical
    join: Join | None  # None: matched but left out (every column leaks); the evidence says why
    evidence: str


def _stem(table: Logical) -> str:
    return PurePosixPath(table.files[0]).name.split(".")[0].lower()


def _comparable(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


class _Search:
    def __init__(self, train: pd.DataFrame, test: pd.DataFrame | None, keys: list[str],
                 aliases: dict[str, str] | None = None) -> None:
        # A main column brought by an earlier join (`orders__user_id`) is compared by its own name.
        self.aliases = aliases or {}
        self.frames = [f for f in (train, test) if f is not None]  # whole: which keys the main table has
        # Sampled: the share of rows matched.
        self.samples = {name: f.sample(_MAIN_SAMPLE, random_state=0) if len(f) > _MAIN_SAMPLE else f
                        for name, f in (("train", train), ("test", test)) if f is not None}
        keys = keys[:_MAX_COLUMNS]
        both = Logical(["main"], pd.concat([s[keys] for s in self.samples.values()], ignore_index=True))
        self.main = [c for c in (self._column(both, k) for k in keys) if c is not None]
        self._normalised: dict[tuple[int, str, KeyForm], pd.Series] = {}
        self._sets: dict[tuple, tuple[set[str], bool]] = {}  # a key's distinct values, and whether it is unique

    def same_name(self, mine: str, theirs: str) -> bool:
        return _comparable(self.aliases.get(mine, mine)) == _comparable(theirs)

    @staticmethod
    def _column(table: Logical, name: str) -> _Column | None:
        cells = table.frame[name].head(_SIDE_ROWS)
        kind = key_kind(cells)
        # A flag (0/1, yes/no) is found in any other flag: two values make no key.
        if kind is None or normalise_key(cells.head(_MAIN_SAMPLE), "text").nunique() < 3:
            return None
        return _Column(table, name, kind, kind == "timestamp" and only_days(cells))

    def _keyed(self, frame: pd.DataFrame, column: str, form: KeyForm) -> pd.Series:
        cache = (id(frame), column, form)
        if cache not in self._normalised:
            # Plain Python strings: set building and membership over arrow-backed text are per
            # element in Python (seconds on a million rows).
            self._normalised[cache] = normalise_key(frame[column].head(_SIDE_ROWS), form).astype(object)
        return self._normalised[cache]

    def _key(self, frame: pd.DataFrame, columns: list[str], forms: list[KeyForm]) -> pd.Series:
        """One text key per row, as `assemble` builds it; blank when a part is blank."""
        parts = [self._keyed(frame, c, f) for c, f in zip(columns, forms)]
        key = parts[0]
        for part in parts[1:]:
            key = key + "\x1f" + part
        blank = pd.concat([p == "" for p in parts], axis=1).any(axis=1)
        return key.where(~blank, "")

    def measure(self, mains: list[str], sides: list[_Column], forms: list[KeyForm]) -> dict[str, float]:
        """Shares of train and test rows whose key the side table holds, the share of the side
        table's keys found in the main table, and whether it has one row per key."""
        frame = sides[0].table.frame
        cache = (id(frame), tuple(s.name for s in sides), tuple(forms))
        if cache not in self._sets:  # a side column is compared with every main column
            theirs = self._key(frame, [s.name for s in sides], forms)
            theirs = theirs[theirs != ""]
            self._sets[cache] = (set(theirs.unique()), theirs.is_unique)
        known, unique = self._sets[cache]
        shares = {name: float(self._key(sample, mains, forms).isin(known).mean()) for name, sample in self.samples.items()}
        cache = ("main", tuple(mains), tuple(forms))
        if cache not in self._sets:
            self._sets[cache] = (set().union(*(set(self._key(f, mains, forms).unique()) for f in self.frames)), False)
        ours = self._sets[cache][0]
        shares["side_found"] = len(known & ours) / len(known) if known else 0.0
        shares["unique"] = float(unique)
        return shares

    @staticmethod
    def accepts(shares: dict[str, float], strict: bool, hinted: bool) -> bool:
        rows = min(shares["train"], shares.get("test", 1.0))
        if hinted:
            return rows >= HINTED and shares["side_found"] >= HINTED
        return rows >= (STRICT if strict else MIN_MATCH) and shares["side_found"] >= (STRICT if strict else MIN_SIDE_FOUND)

    def singles(self, side: list[_Column], hinted: bool) -> list[tuple[_Column, _Column, KeyForm, dict[str, float]]]:
        """Every (main column, side column) pair that matches as a key on its own."""
        found = []
        for mine in self.main:
            for theirs in side:
                form = common_form(mine.kind, theirs.kind, mine.days, theirs.days)
                if form is None:
                    continue
                shares = self.measure([mine.name], [theirs], [form])
                strict = form == "integer" and not self.same_name(mine.name, theirs.name)
                if self.accepts(shares, strict, hinted):
                    found.append((mine, theirs, form, shares))
        # Under the same name first, then the most rows matched, one row per key first.
        found.sort(key=lambda f: (self.same_name(f[0].name, f[1].name), f[3]["unique"],
                                  min(f[3]["train"], f[3].get("test", 1.0))), reverse=True)
        return found

    def best(self, table: Logical, hinted: bool) -> tuple[list[str], list[str], list[KeyForm], dict[str, float]] | None:
        side = [c for c in (self._column(table, n) for n in table.columns[:_MAX_COLUMNS]) if c is not None]
        if not side or not self.main:
            return None
        singles = self.singles(side, hinted)
        options = [([m.name], [s.name], [f], shares) for m, s, f, shares in singles]
        for (m1, s1, f1, _), (m2, s2, f2, _) in combinations(singles[:_PAIR_CANDIDATES], 2):
            if m1.name == m2.name or s1.name == s2.name:
                continue
            shares = self.measure([m1.name, m2.name], [s1, s2], [f1, f2])
            if shares["unique"] and self.accepts(shares, strict=False, hinted=hinted):
                options.append(([m1.name, m2.name], [s1.name, s2.name], [f1, f2], shares))
        if not options:
            return None
        # One row per key first (a table unique on a location and an hour is keyed by both, not
        # summarised per location), then fewer key columns, then names that agree, then the rows matched.
        def rank(o: tuple[list[str], list[str], list[KeyForm], dict[str, float]]) -> tuple:
            named = sum(self.same_name(m, t) for m, t in zip(o[0], o[1])) / len(o[0])
            return (o[3]["unique"], -len(o[0]), named, min(o[3]["train"], o[3].get("test", 1.0)))
        options.sort(key=rank, reverse=True)
        return options[0]


def _time_column(table: Logical, keys: list[str]) -> str | None:
    """The side table's time, when one column outside the key holds timestamps."""
    for name in table.columns[:_MAX_COLUMNS]:
        if name not in keys and key_kind(table.frame[name]) == "timestamp":
            return name
    return None


def _summarised(table: Logical, keys: list[str], time: str | None) -> list[str]:
    """The columns worth summarising per key: not the key, nor a row id of the side table (the
    mean of loan numbers says nothing); its time stays (the first and last dates matter)."""
    columns = []
    for name in table.columns:
        if name in keys:
            continue
        cells = table.frame[name].astype(str).str.strip()
        if name != time and cells.is_unique and key_kind(cells) in ("integer", "text"):
            continue
        columns.append(name)
    return columns


def _prefix(table: Logical, taken: set[str]) -> str:
    """The joined columns' prefix: the file's stem (`stores__`), numbered when two files share it."""
    stem = re.sub(r"[^0-9a-z]+", "_", _stem(table)).strip("_") or "side"
    prefix, n = f"{stem}__", 2
    while prefix in taken:
        prefix, n = f"{stem}{n}__", n + 1
    taken.add(prefix)
    return prefix


def linked_on_page(page: str, tables: list[Logical]) -> set[str]:
    """The tables (first file) a sentence of the page names beside a word of linking."""
    sentences = [s.lower() for s in re.split(r"(?<=[.!?])\s+|\n", page) if _LINKED.search(s)]
    return {t.files[0] for t in tables if any(re.search(rf"\b{re.escape(_stem(t))}\b", s) for s in sentences)}


def _left_out(search: _Search, table: Logical, join: Join, targets: list[str]) -> dict[str, str]:
    """The joined table's columns that leak the answer (leaks.py), judged on the sampled rows as
    joined: column -> why. A summarised column leaks when any of its statistics does."""
    if not targets or "test" not in search.samples:
        return {}
    train, test = (join_table(search.samples[n], table.frame, join) for n in ("train", "test"))
    added = [c for c in train.columns if c not in search.samples["train"].columns]
    found = leaking(train, test, added, targets)
    out: dict[str, str] = {}
    for column in join.columns:
        named = join.prefix + column
        why = next((w for c, w in found.items() if c == named or c.startswith(named + "__")), None)
        if why:
            out[column] = why
    return out


def _hop(search: _Search, tables: list[Logical], linked: set[str], taken: set[str], targets: list[str],
         via: Logical | None) -> list[SideJoin]:
    """The joins `search` finds among `tables`, leaking columns left out (`join` None when every
    column leaks: only the evidence line says the table was matched)."""
    found: list[SideJoin] = []
    for table in tables:
        hinted = table.files[0] in linked
        best = search.best(table, hinted)
        if best is None:
            continue
        mine, theirs, forms, shares = best
        many = not shares["unique"]
        time = _time_column(table, theirs) if many else None
        columns = _summarised(table, theirs, time) if many else [c for c in table.columns if c not in theirs]
        if not columns:
            continue
        prefix = _prefix(table, taken)
        match = {k: round(v, 4) for k, v in shares.items() if k in ("train", "test")}
        join = Join(file=table.files, on=mine[0] if len(mine) == 1 else mine,
                    other_on=theirs[0] if len(theirs) == 1 else theirs, columns=columns,
                    aggregate=many, statistics=many, time_column=time, key_forms=forms, prefix=prefix, match=match,
                    via=via.files[0] if via else None)
        written = [f for f in forms if f != "text"]
        pairs = " + ".join(f"{m!r}~{t!r}" for m, t in zip(mine, theirs))
        how = (f"joined on {pairs} "
               f"({'through ' + ' + '.join(via.files) + '; ' if via else ''}"
               f"{'one-to-many: summarised per key' if many else 'one-to-one'}; "
               f"{shares['train']:.0%} of train rows matched" + (f", {shares['test']:.0%} of test" if "test" in shares else "")
               + (f"; keys read as {', '.join(written)}" if written else "")
               + (f"; last values by {time!r}" if time else "")
               + ("; the page links it" if hinted else "") + ")")
        left_out = _left_out(search, table, join, targets)
        leaks = "; ".join(f"{c!r} {why}" for c, why in left_out.items())
        if len(left_out) == len(columns):
            found.append(SideJoin(table, None, f"side table left out: {' + '.join(table.files)}: {leaks}; it was {how}"))
            continue
        join.columns = [c for c in columns if c not in left_out]
        join.left_out = left_out
        found.append(SideJoin(table, join, (
            f"side table: {' + '.join(table.files)} {how}, {len(join.columns)} column{'' if len(join.columns) == 1 else 's'} as {prefix}*"
            + (f"; left out {leaks}" if leaks else ""))))
    return found


def _bridge(train: pd.DataFrame, test: pd.DataFrame | None, first: SideJoin) -> _Search | None:
    """A search over the main table with `first`'s joined columns that can be keys (orders'
    `user_id`, as `orders__user_id`): the main table as the second hop sees it."""
    assert first.join is not None
    keyable = [c for c in first.join.columns if key_kind(first.table.frame[c]) is not None]
    if not keyable:
        return None
    bridge = first.join.model_copy(update={"columns": keyable})
    joined = [join_table(f, first.table.frame, bridge) if f is not None else None for f in (train, test)]
    keys = [first.join.prefix + c for c in keyable]
    return _Search(joined[0], joined[1], keys, aliases=dict(zip(keys, keyable)))


def find_side_joins(train: pd.DataFrame, test: pd.DataFrame | None, keys: list[str],
                    tables: list[Logical], page: str = "", targets: list[str] | None = None) -> list[SideJoin]:
    """Joins of `tables` to the main table on its candidate key columns `keys` (columns train and
    test share, not the id nor the answers), each with its evidence line; then the tables keyed
    by a column only a one-to-one side table holds (main.order_id -> orders, orders.user_id ->
    users), reached through it: two hops at most. `targets` (train columns) let the leak guard
    leave out a joined column that gives them away."""
    if not tables or not keys:
        return []
    targets = targets or []
    linked = linked_on_page(page, tables)
    taken: set[str] = set()
    found = _hop(_Search(train, test, keys), tables, linked, taken, targets, None)
    rest = [t for t in tables if all(f.table is not t for f in found)]
    for first in [f for f in found if f.join is not None and not f.join.aggregate]:
        search = _bridge(train, test, first) if rest else None
        if search is None:
            continue
        chained = _hop(search, rest, linked, taken, targets, first.table)
        found += chained
        rest = [t for t in rest if all(f.table is not t for f in chained)]
    return found
