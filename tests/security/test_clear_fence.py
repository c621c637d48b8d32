"""A clear is final on every queue kind and across processes (finding D2).

Process A records a thread and its worker is stopped either after taking the job but
before loading the document (the window D2 found: durable queues learned the cleared
turns again) or in the middle of extraction. Process B clears the scope, then A goes on.
A must learn nothing said before the clear, and still learn what the user says after
it. Processes synchronise on files; ``WAIT`` only bounds a failure.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory, MemoryConfig
from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact
from memfold.model import MemoryDocument, Scope
from memfold.store.base import MemoryStore
from memfold.store.factory import open_store

pytestmark = pytest.mark.slow

CTX = multiprocessing.get_context("spawn")
WAIT = 30.0
BEFORE = [
    {"role": "user", "content": "I live in Berlin"},
    {"role": "assistant", "content": "Noted"},
]
AFTER = [
    *BEFORE,
    {"role": "user", "content": "My name is Zoe"},
    {"role": "assistant", "content": "Hi Zoe"},
]


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path.name} never appeared")
        threading.Event().wait(0.01)


class Gate:
    """Stops the first worker that reaches it: touches ``started``, waits for ``release``."""

    def __init__(self, folder: str) -> None:
        self.started = Path(folder) / "started"
        self.release = Path(folder) / "release"
        self.lock = threading.Lock()
        self.used = False

    def stop_here(self) -> None:
        with self.lock:
            if self.used or not threading.current_thread().name.startswith("memfold"):
                return
            self.used = True
        self.started.touch()
        wait_for(self.release)


class GatedStore:
    """A store whose first load in a queue worker waits at the gate."""

    def __init__(self, inner: MemoryStore, gate: Gate | None) -> None:
        self.inner = inner
        self.gate = gate

    def load(self, scope: Scope) -> MemoryDocument:
        if self.gate is not None:
            self.gate.stop_here()
        return self.inner.load(scope)

    def commit(
        self, scope: Scope, document: MemoryDocument, *, expected_revision: int
    ) -> MemoryDocument:
        return self.inner.commit(scope, document, expected_revision=expected_revision)

    def clear(self, scope: Scope, **stamp: str) -> MemoryDocument:
        return self.inner.clear(scope, **stamp)

    def scopes(self) -> Iterator[Scope]:
        return self.inner.scopes()

    def close(self) -> None:
        self.inner.close()


class SayExtractor:
    """One fact per user message; optionally waits at the gate first."""

    name = "say"

    def __init__(self, gate: Gate | None = None) -> None:
        self.gate = gate

    def propose(self, request: ExtractionRequest) -> Extraction:
        if self.gate is not None:
            self.gate.stop_here()
        facts = tuple(
            NewFact(f"Said: {m.content}", "context", 0.9)
            for m in request.messages
            if m.role == "user"
        )
        return Extraction(ChangeSet(new_facts=facts))


def _recorder(config: dict[str, Any], folder: str, where: str) -> None:
    """Process A: record, let the worker stop at the gate, then go on after the clear."""
    gate = Gate(folder)
    settings = MemoryConfig(**config)
    store = GatedStore(open_store(settings), gate if where == "load" else None)
    extractor = SayExtractor(gate if where == "extract" else None)
    with Memory(settings, store=store, extractor=extractor) as mem:
        assert mem.record(BEFORE, thread_id="t", user_id="alice")
        assert mem.flush(WAIT)  # returns once the gated job finished, after the clear
        assert mem.record(AFTER, thread_id="t", user_id="alice")
        assert mem.flush(WAIT)
        status = mem.status()
    (Path(folder) / "done").write_text(json.dumps([status.dropped, status.failed]))


def _config(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    config: dict[str, Any] = {"home": str(tmp_path / "home"), "debounce_seconds": 0, "workers": 1}
    if kind == "postgres":
        dsn = request.getfixturevalue("postgres_dsn")
        config.update(storage="postgres", queue="postgres", dsn=dsn)
    else:
        config.update(queue=kind)
    return config


def clear_while_waiting(config: dict[str, Any], folder: Path, target: Any, *args: Any) -> set[str]:
    """Start process A (``target``), clear alice's memory from here (process B) once A says
    ``started``, let A go on, and return the facts stored for alice at the end."""
    recorder = CTX.Process(target=target, args=(config, str(folder), *args))
    recorder.start()
    try:
        wait_for(folder / "started")
        # another Memory (another replica for postgres): it records a fact and clears
        other = Memory(MemoryConfig(**config), extractor=SayExtractor(), start_workers=False)
        other.add_fact("Prefers tea", user_id="alice")
        other.clear(user_id="alice")
        other.close(0)  # A's job may still be in a durable queue: do not wait for it
        (folder / "release").touch()
        recorder.join(WAIT)
        assert recorder.exitcode == 0
    finally:
        if recorder.is_alive():
            recorder.kill()
    with Memory(MemoryConfig(**config), extractor=SayExtractor(), start_workers=False) as check:
        return {fact.content for fact in check.get(user_id="alice").facts}


@pytest.mark.parametrize("where", ["load", "extract"])
@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_clear_in_another_process_fences_the_job_in_flight(
    kind: str, where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    config = _config(kind, tmp_path, request)
    folder = tmp_path / "sync"
    folder.mkdir()
    facts = clear_while_waiting(config, folder, _recorder, where)
    assert json.loads((folder / "done").read_text()) == [0, 0]  # nothing dropped or failed
    assert facts == {"Said: My name is Zoe"}  # Berlin was said before the clear


def _pending_recorder(config: dict[str, Any], folder: str) -> None:
    """Process A with an in-process queue: its update waits (long debounce) while B clears;
    then the thread goes on in the same pending update and A flushes."""
    with Memory(MemoryConfig(**config), extractor=SayExtractor()) as mem:
        assert mem.record(BEFORE, thread_id="t", user_id="alice")
        (Path(folder) / "started").touch()
        wait_for(Path(folder) / "release")
        assert mem.record(AFTER, thread_id="t", user_id="alice")  # merged into the pending one
        assert mem.status().pending == 1
        assert mem.flush(WAIT)
    (Path(folder) / "done").touch()


def test_clear_in_another_process_forgets_turns_waiting_in_this_process_queue(
    tmp_path: Path,
) -> None:
    config = {"home": str(tmp_path / "home"), "debounce_seconds": 3600, "workers": 1}
    folder = tmp_path / "sync"
    folder.mkdir()
    assert clear_while_waiting(config, folder, _pending_recorder) == {"Said: My name is Zoe"}
