"""Contention never surfaces as an error for ordinary use (finding D18): 32 concurrent
writers on one scope all succeed, and a ConflictError comes only after the documented
``conflict_timeout_seconds``."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory, MemoryConfig
from memfold.errors import ConflictError
from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact
from memfold.model import MemoryDocument, Scope
from memfold.testing import InMemoryStore

WRITERS = 32
EACH = 2  # an update and a manual add each


class OneFactPerTurn:
    name = "one-fact"

    def propose(self, request: ExtractionRequest) -> Extraction:
        facts = tuple(
            NewFact(f"Said {m.content}", "context", 0.9)
            for m in request.messages
            if m.role == "user"
        )
        return Extraction(ChangeSet(new_facts=facts))


@pytest.fixture(params=["json", "sqlite", "postgres"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryConfig:
    options: dict[str, Any] = {
        "home": tmp_path / "home",
        "storage": request.param,
        "max_facts": 1_000,
    }
    if request.param == "postgres":
        options["dsn"] = request.getfixturevalue("postgres_dsn")
    return MemoryConfig(**options)


def test_32_writers_on_one_scope_all_succeed(config: MemoryConfig) -> None:
    # two Memory objects, as two processes would be: their commits race through the store
    mems = [Memory(config, extractor=OneFactPerTurn(), start_workers=False) for _ in range(2)]
    errors: list[BaseException] = []
    start = threading.Barrier(WRITERS)

    def write(index: int) -> None:
        mem = mems[index % 2]
        start.wait()
        try:
            for k in range(EACH):
                if k % 2:
                    mem.add_fact(f"Manual fact {index}-{k}", user_id="alice")
                else:
                    mem.update(
                        [
                            {"role": "user", "content": f"turn {index}-{k}"},
                            {"role": "assistant", "content": "ok"},
                        ],
                        thread_id=f"t{index}-{k}",
                        user_id="alice",
                    )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    try:
        assert errors == []
        contents = [f.content for f in mems[0].get(user_id="alice").facts]
    finally:
        for mem in mems:
            mem.close()
    expected = {
        f"Manual fact {i}-{k}" if k % 2 else f"Said turn {i}-{k}"
        for i in range(WRITERS)
        for k in range(EACH)
    }
    assert len(contents) == len(set(contents))
    assert set(contents) == expected


class AlwaysRacing(InMemoryStore):
    """Every commit finds that someone else committed first."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def commit(
        self, scope: Scope, document: MemoryDocument, *, expected_revision: int, **events: Any
    ) -> Any:
        self.attempts += 1
        raise ConflictError(scope, expected=expected_revision, actual=expected_revision + 1)


def test_a_conflict_error_comes_only_after_conflict_timeout_seconds(tmp_path: Path) -> None:
    store = AlwaysRacing()
    config = MemoryConfig(home=tmp_path, conflict_timeout_seconds=0.5)
    with Memory(config, store=store, start_workers=False) as mem:
        began = time.monotonic()
        with pytest.raises(ConflictError, match="reload and re-apply"):
            mem.add_fact("Likes tea", user_id="alice")
        took = time.monotonic() - began
    assert took >= 0.5
    assert store.attempts >= 10
