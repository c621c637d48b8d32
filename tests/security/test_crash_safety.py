"""A JSON-store writer killed with SIGKILL at random points never leaves a broken file."""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memfold import edits
from memfold.model import Scope
from memfold.store.jsonfile import JsonFileStore

SCOPE = Scope("crash-user", "agent")
KILLS = 100

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs fork and SIGKILL")


def _write_forever(home: Path) -> None:
    """Child process: commit one change after another until killed."""
    store = JsonFileStore(home)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    number = 0
    while True:
        doc = store.load(SCOPE)
        number += 1
        trimmed = doc
        if len(doc.facts) >= 20:
            trimmed = edits.delete_fact(doc, doc.facts[0].id)
        new_doc, _ = edits.add_fact(trimmed, f"fact number {number} {os.getpid()}", now=now)
        store.commit(SCOPE, new_doc, expected_revision=doc.revision)


def test_sigkilled_writer_leaves_a_loadable_file_and_revision_never_goes_back(
    tmp_path: Path,
) -> None:
    rng = random.Random(20261)
    last_revision = 0
    for _ in range(KILLS):
        pid = os.fork()
        if pid == 0:  # pragma: no cover (child)
            try:
                _write_forever(tmp_path)
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0.001, 0.030))  # the random kill point, not a timer wait
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status), "the writer stopped before it was killed"
        document = JsonFileStore(tmp_path, cache_size=0).load(SCOPE)
        assert document.revision >= last_revision
        assert len(document.facts) <= 20
        last_revision = document.revision
    assert last_revision > 0, "no commit ever finished; the test proved nothing"
