"""Fixtures for the REST app: a Memory in a temporary home, keys for an admin and two
users, and TestClients that send each key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from fastapi.testclient import TestClient

from memfold import Memory, MemoryConfig
from memfold.server import create_app
from memfold.server.keys import hash_key

ADMIN_KEY = "admin-key-0123456789abcdef"
ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdefgh"

KEYS: dict[str, Any] = {
    "api_keys_env": None,
    "api_keys": [
        {"sha256": hash_key(ADMIN_KEY), "admin": True, "name": "ops"},
        {"sha256": hash_key(ALICE_KEY), "user_id": "alice"},
        {"sha256": hash_key(BOB_KEY), "user_id": "bob"},
    ],
}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def make_memory(tmp_path: Any, **overrides: Any) -> Memory:
    config = MemoryConfig.build(home=tmp_path / "home", **overrides)
    return Memory(config, start_workers=False)


@pytest.fixture
def admin_headers() -> dict[str, str]:
    return bearer(ADMIN_KEY)


@pytest.fixture
def mem(tmp_path) -> Iterator[Memory]:
    with make_memory(tmp_path, server=KEYS) as memory:
        yield memory


@pytest.fixture
def app(mem):
    return create_app(mem)


def _client(app: Any, key: str) -> Iterator[TestClient]:
    with TestClient(app, headers=bearer(key)) as client:
        yield client


@pytest.fixture
def admin(app) -> Iterator[TestClient]:
    yield from _client(app, ADMIN_KEY)


@pytest.fixture
def alice(app) -> Iterator[TestClient]:
    yield from _client(app, ALICE_KEY)


@pytest.fixture
def bob(app) -> Iterator[TestClient]:
    yield from _client(app, BOB_KEY)


@pytest.fixture
def open_client(tmp_path) -> Iterator[TestClient]:
    """A server without keys (as on 127.0.0.1): every caller is admin."""
    memory = make_memory(tmp_path, server={"api_keys_env": None})
    with memory, TestClient(create_app(memory)) as client:
        yield client


def _conversation(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    out = []
    for user, assistant in pairs:
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return out


@pytest.fixture
def talk() -> Any:
    """``talk(("user says", "assistant says"), ...)`` → OpenAI-style messages."""
    return _conversation
