"""Fixtures for CLI tests: run ``memfold`` in-process (fast); ``cli_helpers`` runs it as
a subprocess (exit codes, tracebacks, interpreter exit)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memfold.cli import main

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """``run("--home", h, "show")`` → (exit status, stdout, stderr), in this process."""

    def invoke(*args: str) -> tuple[int, str, str]:
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return invoke


@pytest.fixture
def home(tmp_path: Path) -> str:
    return str(tmp_path / "home")
