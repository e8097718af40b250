"""The run report's side tables (issue #24): a real run on a tiny relational competition shows each
joined table with its key, kind, match rates and the solver's keep/drop decision with both CV
scores; a plan with a table left out as a leak and no solve yet says so."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agentk.core.records.results import SolveResult
from agentk.report.page import NotAvailable, fmt
from agentk.report.run_joins import read_joins


def _competition(out: Path) -> Path:
    """Rows keyed by a store and an order; the store's size and the order's user's age make y,
    promos.csv (keyed by the store too) is noise. users.csv is reached through orders.csv."""
    rng = np.random.default_rng(7)
    n_train, n_test = 300, 100
    n = n_train + n_test
    stores = pd.DataFrame({"store": range(1, 21), "size": rng.normal(0, 1, 20).round(3)})
    users = pd.DataFrame({"user_id": range(1, 41), "age": rng.integers(18, 80, 40)})
    orders = pd.DataFrame({"order_id": range(1, n + 1), "user_id": rng.integers(1, 41, n)})
    promos = pd.DataFrame({"store": range(1, 21), "promo_a": rng.normal(size=20).round(4), "promo_b": rng.normal(size=20).round(4)})
    main = pd.DataFrame({"row_id": [f"r{i:04d}" for i in range(n)], "store": rng.integers(1, 21, n),
                         "order_id": rng.permutation(np.arange(1, n + 1)), "x": rng.normal(size=n).round(4)})
    size = main["store"].map(stores.set_index("store")["size"])
    age = main["order_id"].map(orders.set_index("order_id")["user_id"]).map(users.set_index("user_id")["age"])
    y = (3 * size + (age - 50) / 10 + 0.5 * main["x"] + 0.1 * rng.normal(size=n)).round(4)
    (out / "data").mkdir(parents=True)
    main.iloc[:n_train].assign(y=y[:n_train]).to_csv(out / "data/train.csv", index=False)
    main.iloc[n_train:].to_csv(out / "data/test.csv", index=False)
    main.iloc[n_train:][["row_id"]].assign(y=0.0).to_csv(out / "data/sample_submission.csv", index=False)
    for name, frame in {"stores": stores, "users": users, "orders": orders, "promos": promos}.items():
        frame.to_csv(out / f"data/{name}.csv", index=False)
    (out / "description.md").write_text("# Store sales\n\nPredict `y` for each row of test.csv.\n\n## Evaluation\n\n"
                                        "Submissions are evaluated on root mean squared error (RMSE).\n")
    return out


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.integration
def test_a_relational_run_shows_its_joins(tmp_path: Path) -> None:
    source = _competition(tmp_path / "stores")
    done = subprocess.run([sys.executable, "-m", "agentk.cli", "run", str(source), "--workspace-root", str(tmp_path / "ws"),
                           "--time-budget", "8", "--folds", "2", "--no-tune", "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    workspace = tmp_path / "ws" / "stores"
    record = json.loads((workspace / "solve/solve_result.json").read_text())["joins"]
    # A 20 s run still checks every block (the check's floor), the chained one too.
    assert set(record["tables"]) == {"data/stores.csv", "data/orders.csv", "data/users.csv", "data/promos.csv"}
    assert record["tables"]["data/stores.csv"]["kept"]
    html = (workspace / "report.html").read_text()
    section = _text(html[html.index('id="joins"'):html.index("Assumed without proof")])
    assert "data/ users.csv through data/ orders.csv orders__user_id ~ user_id one-to-one 100% 100%" in section
    for table, decision in record["tables"].items():
        shown = f"{'kept' if decision['kept'] else 'dropped'} {fmt(decision['score_with'])} {fmt(decision['score_without'])}"
        assert table.replace("/", "/ ") in section and shown in section, (table, section)
    assert "store ~ store one-to-one 100% 100%" in section


def test_a_leak_left_out_and_an_unfinished_solve_are_said(tmp_path: Path) -> None:
    (tmp_path / "setup").mkdir()
    plan = {"joins": [{"table": "data/customers.csv", "on": ["customer"], "other_on": ["customer"], "kind": "one-to-many",
                       "match": {"train": 0.6, "test": 0.55}, "prefix": "customers__", "left_out": {"churned": "a leak"}}],
            "facts": {"notes": ["side table left out: data/labels.csv: 'label' equals the target 'y' ... (a leak)"]}}
    (tmp_path / "setup/plan.json").write_text(json.dumps(plan))
    joins = read_joins(tmp_path, NotAvailable("solve/solve_result.json is missing: the solver has not finished"))
    assert not isinstance(joins, NotAvailable) and joins is not None
    first, left = joins.rows
    assert (first.keys, first.kind, first.match_train, first.match_test, first.decision, first.left_out) == \
        ("customer ~ customer", "one-to-many", 0.6, 0.55, "not checked", ["churned"])
    assert (left.table, left.decision) == ("data/labels.csv", "left out") and left.why.startswith("'label' equals")
    skipped = read_joins(tmp_path, SolveResult.model_validate({"joins": {"skipped": "light mode: every joined table kept"}}))
    assert not isinstance(skipped, NotAvailable) and skipped is not None and skipped.rows[0].decision == "kept"
    (tmp_path / "setup/plan.json").write_text(json.dumps({"joins": []}))
    assert read_joins(tmp_path, NotAvailable("no solve")) is None  # no side table: no section
