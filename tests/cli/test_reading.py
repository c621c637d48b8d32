"""Reading never writes (S4): read commands never run queued updates; ``flush`` does.
And ``status`` still shows the configuration when the store is down."""

from __future__ import annotations

import json
import logging
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from memfold import Memory, MemoryConfig

READS = (["show"], ["context"], ["facts", "list"], ["export"], ["users"], ["status"],
         ["status", "--json"], ["show", "--json"], ["history"], ["summary", "show"],
         ["context", "--explain"], ["search", "Lisbon"])  # fmt: skip


@pytest.fixture
def durable(tmp_path) -> tuple[Path, Path]:
    """A config with the durable SQLite queue, and one update a previous process left due."""
    home = tmp_path / "home"
    config = tmp_path / "q.yaml"
    config.write_text(f"home: {home}\nqueue: sqlite\ndebounce_seconds: 0\n", encoding="utf-8")
    mem = Memory(MemoryConfig.build(config, env={}), start_workers=False)  # a producer only
    mem.record(
        [("user", "I live in Lisbon."), ("assistant", "Noted.")], thread_id="t1", user_id="pierre"
    )
    assert mem.close(timeout=0) is False  # exits without draining: the row stays queued
    return config, home


def _pending(config: Path) -> int:
    with Memory(MemoryConfig.build(config, env={}), start_workers=False) as mem:
        pending = mem.status().pending
        mem.close(timeout=0)
    return pending


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_read_commands_leave_queued_updates_alone(run, durable, command):
    config, _ = durable
    code, _, err = run("--config", str(config), "--user", "pierre", *command)
    assert code == 0, err
    assert _pending(config) == 1
    with Memory(MemoryConfig.build(config, env={}), start_workers=False) as mem:
        assert mem.get(user_id="pierre").facts == ()
        mem.close(timeout=0)


def test_status_reports_the_durable_queue_without_running_it(run, durable):
    config, _ = durable
    code, out, _ = run("--config", str(config), "status")
    assert code == 0
    assert "queue: sqlite: 1 pending, 0 running" in out
    _, raw, _ = run("--config", str(config), "status", "--json")
    assert json.loads(raw)["queue"]["pending"] == 1
    assert _pending(config) == 1


def test_flush_runs_what_is_queued(run, durable):
    config, _ = durable
    code, out, _ = run("--config", str(config), "flush")
    assert code == 0
    assert out.strip() == "ran 1 update; 0 left in the queue"
    assert _pending(config) == 0
    _, block, _ = run("--config", str(config), "--user", "pierre", "context")
    assert "Lives in Lisbon" in block


def test_flush_with_the_in_process_queue_says_there_is_nothing_to_run(run, home):
    code, out, err = run("--home", home, "flush")
    assert (code, out) == (0, "")
    assert "nothing to flush" in err


def test_status_shows_the_configuration_when_the_store_cannot_be_opened(run, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "memfold.sqlite3").write_text("not a database", encoding="utf-8")
    code, out, err = run(
        "--home", str(home), "--config", str(_yaml(tmp_path, "storage: sqlite")), "status"
    )
    assert code == 1
    assert "storage: sqlite" in out
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("memfold: error: ")


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text + "\n", encoding="utf-8")
    return path


def test_export_file_is_private(run, home, tmp_path):
    run("--home", home, "facts", "add", "Likes tea")
    out = tmp_path / "me.json"
    out.write_text("old", encoding="utf-8")
    out.chmod(0o644)
    assert run("--home", home, "export", "-o", str(out))[0] == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert json.loads(out.read_text(encoding="utf-8"))["facts"][0]["content"] == "Likes tea"
    fresh = tmp_path / "new.json"
    assert run("--home", home, "export", "-o", str(fresh))[0] == 0
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


_NOISY_STORE = """
import logging
from memfold.errors import StorageError

def open_noisy(config):
    pool = logging.getLogger("psycopg.pool")
    for _ in range(4):
        pool.warning("error connecting in 'memfold-store': refused\\n\\tIs the server running?")
    raise StorageError("cannot connect to PostgreSQL host=127.0.0.1 port=1 within 10s; check dsn")
"""


def test_a_database_outage_is_one_line_and_pool_noise_only_with_verbose(run, tmp_path, monkeypatch):
    (tmp_path / "noisy_store.py").write_text(textwrap.dedent(_NOISY_STORE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = _yaml(tmp_path, f"home: {tmp_path / 'h'}\nstorage: noisy_store:open_noisy")
    code, _, err = run("--config", str(config), "show")
    assert code == 1
    assert err.strip().splitlines() == [
        "memfold: error: cannot connect to PostgreSQL host=127.0.0.1 port=1 within 10s; check dsn"
    ]
    code, _, err = run("--config", str(config), "-v", "show")
    assert code == 1
    assert "error connecting in 'memfold-store'" in err
    assert logging.getLogger("psycopg.pool").level == logging.NOTSET  # left as it was
    assert "noisy_store" in sys.modules
