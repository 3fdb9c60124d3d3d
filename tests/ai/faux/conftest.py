"""Fixtures of the faux provider tests."""

from __future__ import annotations

import pytest

from tests.ai.faux.sleeps import RecordingSleep


@pytest.fixture
def recording_sleep() -> RecordingSleep:
    """A pacing sleep that records instead of waiting."""
    return RecordingSleep()
