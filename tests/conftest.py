"""Shared test set-up, and how `make test` spreads the suite over two pytest-xdist workers."""

from collections import defaultdict

import pytest

# A fixture module that tests also import from: its asserts are rewritten like a test's.
pytest.register_assert_rewrite("tiny_campaign")

# Modules that share one costly session fixture, or a local Ray cluster, run on one worker, so the
# fixture is built once and no two Ray heads start side by side.
SHARED_GROUP = "tiny_campaign_and_ray"
SHARED_FIXTURES = {"tiny_campaign"}
RAY_MODULES = {"test_campaign", "test_campaign_executors"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test module is one xdist group (`--dist loadgroup`): module-scoped fixtures, such as
    the end-to-end runs started together, are then built once, on one worker."""
    by_module: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        by_module[item.module.__name__ if isinstance(item, pytest.Function) else item.nodeid.split("::")[0]].append(item)
    for module, module_items in by_module.items():
        shared = module.rsplit(".", 1)[-1] in RAY_MODULES or any(SHARED_FIXTURES & set(getattr(i, "fixturenames", ())) for i in module_items)
        for item in module_items:
            item.add_marker(pytest.mark.xdist_group(SHARED_GROUP if shared else module))
