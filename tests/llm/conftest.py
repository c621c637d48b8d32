from __future__ import annotations

from collections.abc import Iterator

import pytest

from memfold.llm.fake_server import FakeOpenAIServer


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running
