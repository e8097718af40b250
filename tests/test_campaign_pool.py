"""A campaign's pool: real folders on disk, real task list files, and Kaggle searches through the
real `kaggle` client against the fake Kaggle on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentk.campaign.pool import PoolTask, expand_pool
from agentk.core.errors import AgentKError
from agentk.kaggle import KaggleClient, RetryPolicy

pytest_plugins = ["kaggle_server"]  # fixtures: fake_kaggle_many

SHARED = Path(__file__).resolve().parents[2] / "shared" / "competitions"


def _competition(folder: Path, comp_id: str | None = None) -> Path:
    """A minimal local competition: description.md and data/train.csv (and an id of its own)."""
    (folder / "data").mkdir(parents=True)
    (folder / "description.md").write_text("# A task\n\nPredict y.\n")
    (folder / "data" / "train.csv").write_text("id,x,y\n1,2,3\n")
    if comp_id:
        (folder / "competition.toml").write_text(f'[competition]\nid = "{comp_id}"\n')
    return folder


@pytest.fixture(autouse=True)
def no_kaggle_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's Kaggle keys; fake_kaggle_many sets its own after this."""
    for name in ("KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_API_TOKEN", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "empty-kaggle-config"))


def _client() -> KaggleClient:
    return KaggleClient(retry=RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=0.05))


# ---- folders


def test_one_competition_folder_is_one_task_keyed_by_its_id(tmp_path: Path) -> None:
    folder = _competition(tmp_path / "some-folder-name", comp_id="alpha")
    pool = expand_pool([str(folder)])
    assert pool.tasks == (PoolTask("alpha", str(folder.resolve()), "folder", None),)
    assert pool.warnings == ()


def test_folder_of_competitions_gives_each_sorted_and_says_what_it_skipped(tmp_path: Path) -> None:
    root = tmp_path / "comps"
    _competition(root / "b-comp", comp_id="beta")
    _competition(root / "a-comp")  # no competition.toml: the folder name is the id
    (root / "notes").mkdir()
    (root / "notes" / "todo.txt").write_text("not a competition")
    (root / ".cache").mkdir()  # hidden folders and plain files are not candidates at all
    (root / "README.md").write_text("# competitions\n")
    pool = expand_pool([str(root)])
    assert [(t.key, Path(t.source).name, t.kind) for t in pool.tasks] == [
        ("a-comp", "a-comp", "folder"), ("beta", "b-comp", "folder")]
    assert len(pool.warnings) == 1
    assert pool.warnings[0].startswith(f"{(root / 'notes').resolve()}: ")
    assert "not a competition folder" in pool.warnings[0]


def test_the_shared_competitions_folder(tmp_path: Path) -> None:
    pool = expand_pool([str(SHARED)])
    keys = [t.key for t in pool.tasks]
    assert keys == sorted(keys) and {"titanic", "spaceship-titanic", "playground-series-s3e5"} <= set(keys)
    assert all(Path(t.source).is_absolute() and t.slug is None for t in pool.tasks)


def test_the_same_competition_twice_keeps_the_first_and_warns_when_sources_differ(tmp_path: Path) -> None:
    one = _competition(tmp_path / "one", comp_id="titanic")
    pool = expand_pool([str(one), str(one), "https://www.kaggle.com/c/titanic"])
    assert [t.source for t in pool.tasks] == [str(one.resolve())]
    assert len(pool.warnings) == 1, "an exact repeat is dropped quietly; another source is reported"
    assert "kaggle.com/competitions/titanic" in pool.warnings[0]


def test_limit_cuts_the_pool_and_says_so(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        _competition(tmp_path / "comps" / name)
    pool = expand_pool([str(tmp_path / "comps")], limit=2)
    assert [t.key for t in pool.tasks] == ["a", "b"]
    assert pool.warnings == ("1 competitions past the first 2 of 3 (--limit)",)


# ---- task list files


def test_task_list_with_relative_paths_comments_urls_and_slugs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lists = tmp_path / "lists"
    lists.mkdir()
    alpha = _competition(lists / "comps" / "alpha")
    beta = _competition(tmp_path / "other" / "beta")
    local_slug = _competition(lists / "house-prices")  # a folder beside the file wins over the slug
    (lists / "tasks.txt").write_text(
        "# my campaign\n"
        "\n"
        "comps/alpha   # relative to this file\n"
        "https://www.kaggle.com/competitions/Titanic\n"
        "   spaceship-titanic\n"
        "../other/beta\n"
        "titanic\n"  # the URL above again: dropped
        "https://www.kaggle.com/c/titanic#overview\n"
        "house-prices\n"
    )
    monkeypatch.chdir(tmp_path / "other")  # relative lines must not resolve against the cwd
    pool = expand_pool([str(lists / "tasks.txt")])
    assert pool.tasks == (
        PoolTask("alpha", str(alpha.resolve()), "folder"),
        PoolTask("titanic", "https://www.kaggle.com/competitions/titanic", "kaggle", "titanic"),
        PoolTask("spaceship-titanic", "https://www.kaggle.com/competitions/spaceship-titanic", "kaggle",
                 "spaceship-titanic"),
        PoolTask("beta", str(beta.resolve()), "folder"),
        PoolTask("house-prices", str(local_slug.resolve()), "folder"),
    )
    assert pool.warnings == ()


def test_kaggle_references_need_no_credentials_until_run(tmp_path: Path) -> None:
    # No credentials exist here (autouse fixture): making a client would fail, so none is made.
    pool = expand_pool(["https://www.kaggle.com/competitions/titanic/data", "spaceship-titanic"])
    assert [t.slug for t in pool.tasks] == ["titanic", "spaceship-titanic"]


# ---- Kaggle searches, through the real client and the fake Kaggle


def test_kaggle_search_by_category_and_text(fake_kaggle_many) -> None:
    client = _client()
    assert [t.key for t in expand_pool(["kaggle:playground"], client=client).tasks] == ["playground-series-s3e5"]
    assert [t.key for t in expand_pool(["kaggle::titanic"], client=client).tasks] == ["titanic"]
    assert [t.key for t in expand_pool(["kaggle:getting-started"], client=client).tasks] == ["titanic"]
    assert [t.key for t in expand_pool(["kaggle:all:wine"], client=client).tasks] == ["playground-series-s3e5"]
    both = expand_pool(["kaggle:"], client=client).tasks
    assert both == (
        PoolTask("titanic", "https://www.kaggle.com/competitions/titanic", "kaggle", "titanic"),
        PoolTask("playground-series-s3e5", "https://www.kaggle.com/competitions/playground-series-s3e5",
                 "kaggle", "playground-series-s3e5"),
    )
    assert [t.key for t in expand_pool(["kaggle:"], client=client, limit=1).tasks] == ["titanic"]


def test_kaggle_search_makes_its_client_from_the_environment(fake_kaggle_many, tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("kaggle:playground\n")
    pool = expand_pool([str(tmp_path / "tasks.txt")])
    assert [t.key for t in pool.tasks] == ["playground-series-s3e5"]
    assert "ListCompetitions" in fake_kaggle_many.calls


@pytest.mark.parametrize("page_tokens", [True, False], ids=["by-token", "by-number"])
def test_search_pages_until_the_limit(fake_kaggle_many, page_tokens: bool) -> None:
    fake_kaggle_many.page_tokens = page_tokens
    client = _client()
    assert client.search(None, "", 10, page_size=1) == ["titanic", "playground-series-s3e5"]
    # By token the second page says there is no third; by number only an empty page says so.
    assert fake_kaggle_many.calls.count("ListCompetitions") == (2 if page_tokens else 3)
    fake_kaggle_many.calls.clear()
    assert client.search(None, "", 1, page_size=1) == ["titanic"]
    assert fake_kaggle_many.calls.count("ListCompetitions") == 1, "no page past the limit"


# ---- bad input: one clear line each


def _error(specs: list[str], **kwargs) -> str:
    with pytest.raises(AgentKError) as caught:
        expand_pool(specs, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_path_that_does_not_exist(tmp_path: Path) -> None:
    assert _error([str(tmp_path / "nowhere" / "comps")]).startswith(f"not found: {tmp_path / 'nowhere' / 'comps'}")


def test_an_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    message = _error([str(tmp_path / "empty")])
    assert message.startswith(f"no competitions found in {tmp_path / 'empty'}")


def test_a_folder_with_no_competition_under_it(tmp_path: Path) -> None:
    (tmp_path / "comps" / "notes").mkdir(parents=True)
    message = _error([str(tmp_path / "comps")])
    assert message == f"no competitions found in {tmp_path / 'comps'}: none of its 1 folders is a competition"


def test_a_half_competition_folder_says_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "description.md").write_text("# t\n")
    assert "data is missing or empty" in _error([str(tmp_path / "half")])


def test_a_task_list_with_no_usable_line(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("# nothing yet\n\n   \n# titanic\n")
    assert _error([str(tmp_path / "tasks.txt")]) == (
        f"no competitions found in {tmp_path / 'tasks.txt'}: every line is blank or a # comment")


def test_a_bad_line_names_its_file_and_line(tmp_path: Path) -> None:
    _competition(tmp_path / "alpha")
    (tmp_path / "tasks.txt").write_text("alpha\n# next\n./missing-folder\n")
    assert _error([str(tmp_path / "tasks.txt")]).startswith(
        f"{tmp_path / 'tasks.txt'}, line 3: not found: {tmp_path / 'missing-folder'}")


def test_a_task_list_that_lists_itself(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("tasks.txt\n")
    assert "lists itself" in _error([str(tmp_path / "tasks.txt")])


def test_a_binary_file_is_not_a_task_list(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(b"\xff\xfe\x00\x81" * 10)
    assert "is not a readable text file of tasks" in _error([str(tmp_path / "data.bin")])


def test_text_that_is_neither_path_nor_reference(tmp_path: Path) -> None:
    assert _error(["My Competition"]).startswith("not found:")


def test_no_specs_and_a_bad_limit(tmp_path: Path) -> None:
    assert _error([]).startswith("no competitions given")
    _competition(tmp_path / "a")
    assert _error([str(tmp_path / "a")], limit=0) == "the pool limit must be at least 1, not 0"


def test_a_kaggle_search_with_no_result(fake_kaggle_many) -> None:
    assert _error(["kaggle:playground:titanic"], client=_client()) == (
        "no Kaggle competition matches 'kaggle:playground:titanic'")


def test_an_unknown_kaggle_category(fake_kaggle_many) -> None:
    message = _error(["kaggle:tabular"], client=_client())
    assert message.startswith("unknown Kaggle competition category 'tabular': one of ")
    assert "playground" in message and "ListCompetitions" not in fake_kaggle_many.calls
