"""Shared test set-up."""

import pytest

# A fixture module that tests also import from: its asserts are rewritten like a test's.
pytest.register_assert_rewrite("tiny_campaign")
