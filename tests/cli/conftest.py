"""Fixtures for CLI tests (``run``, in-process, is in the root conftest); ``cli_helpers``
runs memfold as a subprocess (exit codes, tracebacks, interpreter exit)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> str:
    return str(tmp_path / "home")
