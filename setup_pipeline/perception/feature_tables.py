"""Tables that add columns to the train and test rows, matched by their key (a customer's details,
a recording's histogram of segments): joined as they are, or averaged with a row count when a key
has several rows. A mixin of the roles' decider (roles.py), which owns `self.roles`."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from setup_pipeline.perception.recipe import Join
from setup_pipeline.perception.table_index import TableIndex
from setup_pipeline.perception.tables import MATCH, Logical, is_unique, overlap

if TYPE_CHECKING:
    from setup_pipeline.perception.roles import Roles


class FeatureTables(TableIndex):
    roles: Roles

    def say(self, line: str) -> None:
        raise NotImplementedError  # the decider records its evidence

    def feature_tables(self, train: Logical, test: Logical | None, train_key: str | None, test_key: str | None,
                       rest: list[Logical]) -> list[tuple[Logical, str]]:
        """Tables that add columns to train and test rows, matched by their key."""
        if train_key is None:
            return []
        found = []
        train_keys = self.values(train, train_key)
        test_keys = self.values(test, test_key) if test is not None and test_key else set()
        for table in rest:
            for column in table.columns:
                theirs = self.values(table, column)
                # Under the key's own name, half the rows having details is enough (not every
                # customer has past loans); under another name the keys must all be there.
                need = 0.5 if column.lower() == train_key.lower() else MATCH
                if overlap(train_keys, theirs) >= need and (not test_keys or overlap(test_keys, theirs) >= need):
                    found.append((table, column))
                    break
        return found

    def join_feature_tables(self, train: Logical, test: Logical | None, train_key: str | None,
                            test_key: str | None, others: list[Logical]) -> list[Logical]:
        """Join the tables keyed by the id to train and test; returns the tables left."""
        roles = self.roles
        assert roles.train is not None
        for table, column in self.feature_tables(train, test, train_key, test_key, others):
            present = set(train.columns) | set(roles.train.beside_columns) | {c for j in roles.train.joins for c in j.columns}
            columns = [c for c in table.columns if c != column and c not in present]
            if not columns:
                continue
            many = not is_unique(table.frame, column)
            count = f"{PurePosixPath(table.files[0]).name.split('.')[0]}_rows" if many else None
            spec = {"file": table.files, "other_on": column, "columns": columns, "aggregate": many, "count_column": count}
            roles.train.joins.append(Join(on=train_key, **spec))
            if roles.test is not None and test_key:
                roles.test.joins.append(Join(on=test_key, **spec))
            self.say(f"more features: {' + '.join(table.files)} ({len(columns)} columns), joined on {column!r}"
                     + (" (several rows per key: averaged, with a row count)" if many else ""))
            others = [t for t in others if t is not table]
        return others
