"""Side tables keyed by other columns than the id are found from their content and joined as a
Kaggle expert would: one row per key column-wise, several rows per key summarised, timestamps
written two ways read as one, rows never dropped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from setup_pipeline.perception.catalogue import build_catalogue
from setup_pipeline.perception.keys import normalise_key
from setup_pipeline.perception.recipe import Join, TableRecipe, assemble
from setup_pipeline.perception.roles import decide_roles

N_TRAIN, N_TEST = 200, 60
LOCATIONS = [f"L{i}" for i in range(5)]
HOURS = [f"2015-07-31 {h:02d}:00:00" for h in range(24)]


def _main(rng: np.random.Generator, n: int, start: int) -> pd.DataFrame:
    return pd.DataFrame({
        "row_id": [f"r{start + i:05d}" for i in range(n)],
        "store": rng.integers(1, 21, n),
        "location": rng.choice(LOCATIONS, n),
        "hour": rng.choice(HOURS, n),
        "customer": [f"c{i % 40:02d}" for i in range(n)],
        "region": [f"R{i % 10}" for i in range(n)],
        "x": rng.normal(size=n).round(4),
    })


def _tables() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(0)
    train = _main(rng, N_TRAIN, 0).assign(y=rng.normal(size=N_TRAIN).round(3))
    test = _main(rng, N_TEST, N_TRAIN)
    stores = pd.DataFrame({"Store": range(1, 21), "size": rng.normal(100, 10, 20).round(1),
                           "kind": rng.choice(["a", "b", "c"], 20)}).sample(frac=1, random_state=1)
    # The same hours written as ISO with a zone: the pair (location, hour) is the key.
    weather = pd.DataFrame([{"location": loc, "hour": h.replace(" ", "T") + "Z", "temp": round(float(rng.normal(20, 5)), 2)}
                            for loc in LOCATIONS for h in HOURS])
    loans = pd.DataFrame({"customer": [f"c{i % 40:02d}" for i in range(120)],
                          "amount": [float(10 * (i % 3 + 1)) for i in range(120)],
                          "purpose": [["car", "home", "home"][i // 40] for i in range(120)],
                          "when": [f"2014-0{1 + i // 40}-15" for i in range(120)]})
    # Regions R0..R5 only: 60% of the rows find theirs, the rest keep blanks.
    regions = pd.DataFrame({"region": [f"R{i}" for i in range(6)], "population": [float(1000 * (i + 1)) for i in range(6)]})
    noise = pd.DataFrame({"u": rng.normal(size=50).round(5), "v": rng.normal(size=50).round(5),
                          "w": [f"{rng.normal():.6f}" for _ in range(50)]})
    return {"train.csv": train, "test.csv": test, "sample_submission.csv": test[["row_id"]].assign(y=0.0),
            "stores.csv": stores, "weather.csv": weather, "loans.csv": loans, "regions.csv": regions,
            "noise.csv": noise}


def _folder(tmp_path: Path, files: dict[str, pd.DataFrame]) -> Path:
    raw = tmp_path / "raw"
    (raw / "data").mkdir(parents=True)
    for name, frame in files.items():
        frame.to_csv(raw / "data" / name, index=False)
    (raw / "description.md").write_text("Predict y for each row.\n")
    return raw


@pytest.fixture(scope="module")
def relational(tmp_path_factory: pytest.TempPathFactory):
    tables = _tables()
    raw = _folder(tmp_path_factory.mktemp("relational"), tables)
    return raw, tables, decide_roles(build_catalogue(raw), None)


def _joins(recipe: TableRecipe) -> dict[str, Join]:
    return {j.file[0].removeprefix("data/"): j for j in recipe.joins}


def test_side_tables_found_from_content(relational) -> None:
    _, _, roles = relational
    joins = _joins(roles.train)
    assert set(joins) == {"stores.csv", "weather.csv", "loans.csv", "regions.csv"}  # not the noise
    assert (joins["stores.csv"].on, joins["stores.csv"].other_on, joins["stores.csv"].aggregate) == ("store", "Store", False)
    assert joins["weather.csv"].keys == ["location", "hour"] and joins["weather.csv"].key_forms == ["text", "timestamp"]
    assert not joins["weather.csv"].aggregate
    assert joins["loans.csv"].on == "customer" and joins["loans.csv"].statistics and joins["loans.csv"].time_column == "when"
    assert joins["regions.csv"].match["train"] == pytest.approx(0.6)
    # Test rows get exactly the same joins.
    assert [j.model_dump() for j in roles.test.joins] == [j.model_dump() for j in roles.train.joins]
    assert any(line.startswith("side table: data/weather.csv") and "timestamp" in line for line in roles.evidence)


def test_assembled_frames_carry_the_joined_columns(relational) -> None:
    raw, tables, roles = relational
    for frame, source in ((assemble(raw, roles.train), tables["train.csv"]), (assemble(raw, roles.test), tables["test.csv"])):
        assert len(frame) == len(source) and frame["row_id"].tolist() == source["row_id"].tolist()  # rows kept, in order
        stores = tables["stores.csv"].set_index("Store")
        assert frame["stores__kind"].tolist() == stores.loc[source["store"], "kind"].tolist()
        weather = tables["weather.csv"].assign(hour=lambda w: normalise_key(w["hour"], "timestamp")).set_index(["location", "hour"])
        expected = [str(weather.loc[(loc, h), "temp"]) for loc, h in zip(source["location"], source["hour"])]
        assert [str(float(t)) for t in frame["weather__temp"]] == expected
        assert set(frame.columns) >= {"loans__rows", "loans__amount__mean", "loans__amount__min", "loans__amount__max",
                                      "loans__purpose__distinct", "loans__purpose__last"}
        blank = frame["regions__population"] == ""
        assert blank.tolist() == (~source["region"].isin([f"R{i}" for i in range(6)])).tolist()


def test_one_to_many_summary_values(relational) -> None:
    raw, tables, roles = relational
    row = assemble(raw, roles.train).set_index("row_id").loc["r00001"]  # customer c01: loans 1, 41, 81
    assert row["loans__rows"] == "3"
    assert (float(row["loans__amount__mean"]), float(row["loans__amount__min"]), float(row["loans__amount__max"])) == (20.0, 10.0, 30.0)
    assert row["loans__purpose__distinct"] == "2" and row["loans__purpose__last"] == "home"  # car in January, home since


def test_id_keyed_tables_keep_the_old_join(tmp_path: Path) -> None:
    """A table keyed by the id is joined as before (unprefixed); no side table without a key."""
    tables = _tables()
    details = pd.concat([tables["train.csv"], tables["test.csv"]])[["row_id"]].assign(height=1.5)
    files = {k: tables[k] for k in ("train.csv", "test.csv", "sample_submission.csv", "noise.csv")} | {"details.csv": details}
    roles = decide_roles(build_catalogue(_folder(tmp_path, files)), None)
    assert [(j.on, j.columns, j.prefix) for j in roles.train.joins] == [("row_id", ["height"], "")]


def test_key_forms_read_alike() -> None:
    stamps = pd.Series(["2015-07-31", "2015-07-31 00:00:00", "2015-07-31T00:00:00Z", "2015-07-31T02:00:00+02:00", ""])
    assert normalise_key(stamps, "timestamp").tolist() == ["2015-07-31 00:00:00"] * 4 + [""]
    assert normalise_key(pd.Series(["2015-07-31 13:00"]), "day").tolist() == ["2015-07-31"]
    assert normalise_key(pd.Series(["7", "7.0", "007", " 12 "]), "integer").tolist() == ["7", "7", "7", "12"]


def test_the_solver_drops_a_joined_block_that_does_not_help(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fast LightGBM CV with and without each joined block: the informative one stays, noise goes."""
    from solve_pipeline.inputs.join_selection import select_joins
    from solve_pipeline.inputs.solve_inputs import SolveOptions, prepare
    from solver_workspaces import LABEL_FORMAT, RMSE_LOG_METRIC, write_workspace

    rng = np.random.default_rng(3)
    n = 400
    signal = rng.normal(size=n)
    tab = pd.DataFrame({"id": [f"i{i}" for i in range(n)], "x": rng.normal(size=n), "stores__signal": signal,
                        "noise__u": rng.normal(size=n), "noise__v": rng.normal(size=n)})
    y = pd.DataFrame({"id": tab["id"], "y": np.exp(1 + 0.8 * signal + 0.05 * rng.normal(size=n))})
    train, test = tab.iloc[:300], tab.iloc[300:]
    workspace = write_workspace(tmp_path / "ws", inputs={"tab": (train, test)}, targets=y.iloc[:300],
                                test_ids=list(test["id"]), spec={"column": "y", "task": "regression"}, id_name="id",
                                metric=RMSE_LOG_METRIC, formatter=LABEL_FORMAT, sample=None)
    monkeypatch.chdir(tmp_path)  # prepare() enters setup/, as the solver subprocess does
    _, ctx, _, _ = prepare(SolveOptions(workspace=workspace, folds=3))
    plan = {"joins": [{"table": "data/stores.csv", "prefix": "stores__"}, {"table": "data/noise.csv", "prefix": "noise__"}]}
    record = select_joins(ctx, plan, budget_s=20, light=False)  # a tiny run still compares (the floor)
    assert record["tables"]["data/stores.csv"]["kept"] and not record["tables"]["data/noise.csv"]["kept"]
    assert "stores__signal" in ctx.features.tab_names and not any(n.startswith("noise__") for n in ctx.features.tab_names)
    assert select_joins(ctx, {"joins": []}, budget_s=None, light=False) == {"skipped": "no side table was joined"}


def test_small_numbers_under_another_name_are_no_key(tmp_path: Path) -> None:
    """A day of the week (1..7) is found among week numbers (1..52), but most week numbers are not
    in the main table: no key. A store number under another name matches every way: a key."""
    tables = _tables()
    for name in ("train.csv", "test.csv"):
        tables[name] = tables[name].assign(dow=[1 + i % 7 for i in range(len(tables[name]))])
    weeks = pd.DataFrame({"week": range(1, 53), "sales": np.linspace(0, 1, 52).round(3)})
    shops = tables["stores.csv"].rename(columns={"Store": "shop_id"})
    files = {k: tables[k] for k in ("train.csv", "test.csv", "sample_submission.csv")} | {"weeks.csv": weeks, "shops.csv": shops}
    roles = decide_roles(build_catalogue(_folder(tmp_path, files)), None)
    assert [(j.file, j.on, j.other_on) for j in roles.train.joins] == [(["data/shops.csv"], "store", "shop_id")]


def test_the_page_may_vouch_for_a_weak_link(tmp_path: Path) -> None:
    """Regions found for 30% of the rows: too few on content alone, enough when the page links them."""
    tables = _tables()
    files = {k: tables[k] for k in ("train.csv", "test.csv", "sample_submission.csv")}
    files["regions.csv"] = tables["regions.csv"].iloc[:3]
    raw = _folder(tmp_path, files)
    assert decide_roles(build_catalogue(raw), None).train.joins == []
    page = "Predict y.\n\nExtra facts per region are in regions.csv; it can be joined on `region`.\n"
    roles = decide_roles(build_catalogue(raw), None, page=page)
    assert [j.prefix for j in roles.train.joins] == ["regions__"] and "the page links it" in roles.evidence[-1]


def test_one_file_with_train_and_test_rows_gets_its_side_table(tmp_path: Path) -> None:
    """Train and test in one file (blank answers to predict): both row sets get the store's columns."""
    tables = _tables()
    both = pd.concat([tables["train.csv"], tables["test.csv"].assign(y="")], ignore_index=True)
    files = {"data.csv": both, "sample_submission.csv": tables["sample_submission.csv"], "stores.csv": tables["stores.csv"]}
    roles = decide_roles(build_catalogue(_folder(tmp_path, files)), None)
    assert [j.prefix for j in roles.train.joins] == [j.prefix for j in roles.test.joins] == ["stores__"]
    assert len(roles.train_frame) == N_TRAIN and len(roles.test_frame) == N_TEST
    assert (roles.test_frame["stores__size"] != "").all()


def _orders_and_customers() -> dict[str, pd.DataFrame]:
    """Rows keyed by an order and a customer: orders lead to users (a second hop); the customers of
    test are not those of train, and two tables hold the answer for train's customers only."""
    rng = np.random.default_rng(5)
    churn = {f"c{i:02d}": ["no", "yes"][i % 2] for i in range(40)}

    def rows(n: int, start: int, customers: list[str]) -> pd.DataFrame:
        return pd.DataFrame({"row_id": [f"r{start + i:05d}" for i in range(n)],
                             "order_id": rng.permutation(np.arange(start + 1, start + n + 1)),
                             "customer": rng.choice(customers, n), "x": rng.normal(size=n).round(4)})
    train = rows(N_TRAIN, 0, list(churn)[:30])
    train["y"] = train["customer"].map(churn)
    test = rows(N_TEST, N_TRAIN, list(churn)[30:])
    n = N_TRAIN + N_TEST
    orders = pd.DataFrame({"order_id": range(1, n + 1), "user_id": rng.integers(1, 31, n), "items": rng.integers(1, 9, n)})
    users = pd.DataFrame({"user_id": range(1, 31), "age": rng.integers(18, 80, 30), "segment": rng.choice(["a", "b", "c"], 30)})
    seen = [int(c[1:]) < 30 for c in churn]
    customers = pd.DataFrame({"customer": list(churn), "region": [f"R{i % 4}" for i in range(40)],
                              "churned": [v if s else "" for v, s in zip(churn.values(), seen)]})
    labels = pd.DataFrame({"customer": list(churn), "label": [int(v == "yes") if s else "" for v, s in zip(churn.values(), seen)]})
    return {"train.csv": train, "test.csv": test, "sample_submission.csv": test[["row_id"]].assign(y="no"),
            "orders.csv": orders, "users.csv": users, "customers.csv": customers, "labels.csv": labels}


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory):
    tables = _orders_and_customers()
    raw = _folder(tmp_path_factory.mktemp("orders"), tables)
    return raw, tables, decide_roles(build_catalogue(raw), None)


def test_a_side_table_of_a_side_table_is_reached_through_it(orders) -> None:
    """main.order_id -> orders.order_id, orders.user_id -> users.user_id: users joins on the column
    the orders join brought, after it, with its own block (the solver checks it on its own)."""
    raw, tables, roles = orders
    joins = _joins(roles.train)
    assert (joins["users.csv"].on, joins["users.csv"].other_on, joins["users.csv"].via) == ("orders__user_id", "user_id", "data/orders.csv")
    assert joins["users.csv"].match == {"train": 1.0, "test": 1.0} and joins["users.csv"].prefix == "users__"
    files = [j.file[0] for j in roles.train.joins]
    assert files.index("data/orders.csv") < files.index("data/users.csv")  # assembled in order
    assert any(line.startswith("side table: data/users.csv") and "through data/orders.csv" in line for line in roles.evidence)
    for frame, source in ((assemble(raw, roles.train), tables["train.csv"]), (assemble(raw, roles.test), tables["test.csv"])):
        user = source["order_id"].map(tables["orders.csv"].set_index("order_id")["user_id"])
        assert frame["users__age"].tolist() == user.map(tables["users.csv"].set_index("user_id")["age"]).astype(str).tolist()


def test_a_side_table_is_not_reached_through_a_summarised_one(tmp_path: Path) -> None:
    """Only a one-to-one table leads on: a summarised table's columns are statistics, not keys."""
    tables = _orders_and_customers()
    many = pd.concat([tables["orders.csv"], tables["orders.csv"].assign(items=1)], ignore_index=True)
    files = {k: tables[k] for k in ("train.csv", "test.csv", "sample_submission.csv", "users.csv")} | {"orders.csv": many}
    roles = decide_roles(build_catalogue(_folder(tmp_path, files)), None)
    assert [(j.file[0], j.statistics) for j in roles.train.joins] == [("data/orders.csv", True)]


def test_a_joined_column_that_holds_train_answers_is_left_out(orders) -> None:
    """customers.churned is train's answer, blank for test's customers: left out, with why, while
    the table's other column joins; labels.csv holds nothing else: left out whole."""
    raw, _, roles = orders
    joins = _joins(roles.train)
    assert joins["customers.csv"].columns == ["region"] and list(joins["customers.csv"].left_out) == ["churned"]
    assert "labels.csv" not in joins
    line = next(e for e in roles.evidence if e.startswith("side table: data/customers.csv"))
    assert "left out 'churned' equals the target 'y' on train rows but is blank on 100% of test rows (a leak)" in line
    line = next(e for e in roles.evidence if "labels.csv" in e)
    assert line.startswith("side table left out: data/labels.csv: 'label' nearly determines the target 'y'")
    frame = assemble(raw, roles.train)
    assert not any("churned" in c or "label" in c for c in frame.columns) and "customers__region" in frame.columns


def test_one_file_of_train_and_test_rows_gets_the_leak_guard(tmp_path: Path) -> None:
    """Train and test in one file: the answered and the blank rows are judged apart, so the
    table holding answers for the answered rows' customers is left out there too."""
    tables = _orders_and_customers()
    both = pd.concat([tables["train.csv"], tables["test.csv"].assign(y="")], ignore_index=True)
    files = {"data.csv": both, "sample_submission.csv": tables["sample_submission.csv"], "labels.csv": tables["labels.csv"],
             "customers.csv": tables["customers.csv"]}
    roles = decide_roles(build_catalogue(_folder(tmp_path, files)), None)
    assert [(j.file[0], j.columns) for j in roles.train.joins] == [("data/customers.csv", ["region"])]
    assert any(e.startswith("side table left out: data/labels.csv") for e in roles.evidence)


def test_a_telling_column_that_test_rows_hold_is_a_feature() -> None:
    from setup_pipeline.perception.leaks import gives_away, leaking

    y = pd.Series(["a", "b"] * 30)
    assert gives_away(y.map({"a": "1", "b": "0"}), y) == "nearly determines"
    assert gives_away(pd.Series([f"{v:.3f}" for v in np.arange(60) * 2.0]), pd.Series([str(v) for v in np.arange(60)])) == "nearly determines"
    assert gives_away(pd.Series([f"id{i}" for i in range(60)]), y) is None  # unique per row: says nothing
    train = pd.DataFrame({"y": y, "copy": y, "weak": ["u", "v", "w"] * 20})
    test = pd.DataFrame({"copy": ["a"] * 10, "weak": [""] * 10})
    assert leaking(train, test, ["copy", "weak"], ["y"]) == {}  # held by test rows / telling nothing


def test_the_join_check_has_a_floor_on_tiny_budgets() -> None:
    from solve_pipeline.inputs.join_selection import check_seconds

    assert check_seconds(20) == 6.0  # not 2 s: a small table is still compared
    assert check_seconds(5) == 1.5  # never more than 30% of the run
    assert check_seconds(600) == 60.0 and check_seconds(None) == 120.0
