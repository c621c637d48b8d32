"""Fixtures of the MCP server tests (helpers are in ``mcp_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memfold import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """A Memory on a temporary home whose updates run only on ``flush()``."""
    with Memory(home=tmp_path / "home", start_workers=False) as mem:
        yield mem
