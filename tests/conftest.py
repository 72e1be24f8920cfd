"""Fixtures and hypothesis settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=2000,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    return tmp_path / "logs"


@pytest.fixture(autouse=True)
def fresh_summary_context() -> object:
    """Every test starts (and leaves) the thread with no default writer or step.

    The once-per-process no-default-writer hint is ignored: which test would see it
    depends on the order tests run in and the writers earlier ones left open.
    test_context checks it in fresh processes.
    """
    import warnings

    from summarylib.errors import NoDefaultWriterWarning
    from summarylib.writer import _context as context

    warnings.filterwarnings("ignore", category=NoDefaultWriterWarning)
    context._local.state = context.State()
    yield
    context._local.state = context.State()
