"""B1: a script that ends without ``close()`` does not lose its updates. Each test runs a
real interpreter, because the drain happens at interpreter exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from memfold import Memory, MemoryConfig


def _python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


_RECORD_AND_EXIT = """
    import sys
    from memfold import Memory
    mem = Memory(home=sys.argv[1], debounce_seconds=30, **dict(a.split("=") for a in sys.argv[2:]))
    mem.record([("user", "I live in Berlin."), ("assistant", "Noted.")],
               thread_id="t1", user_id="alice")
    print("recorded")  # and the script ends: no close(), no with
"""


def test_an_update_recorded_just_before_exit_is_drained(tmp_path: Path):
    home = tmp_path / "home"
    done = _python(_RECORD_AND_EXIT, str(home))
    assert done.returncode == 0, done.stderr
    with Memory(home=str(home)) as mem:
        assert [f.content for f in mem.get(user_id="alice").facts] == ["Lives in Berlin"]
    assert "a Memory was still open at interpreter exit" in done.stderr
    assert "it ran 1 pending update(s) (0 failed attempt(s)) and left 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_closed_memory_logs_nothing_at_exit(tmp_path: Path):
    script = """
        import sys
        from memfold import Memory
        with Memory(home=sys.argv[1]) as mem:
            mem.record([("user", "I live in Rome."), ("assistant", "Ok.")], thread_id="t")
    """
    done = _python(script, str(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_a_durable_queue_keeps_what_the_exit_drain_could_not_run(tmp_path: Path):
    home = tmp_path / "home"
    done = _python(_RECORD_AND_EXIT, str(home), "queue=sqlite", "shutdown_timeout_seconds=0")
    assert done.returncode == 0, done.stderr
    assert "left 1 (they stay in the durable queue for the next process)" in done.stderr
    config = MemoryConfig(home=home, queue="sqlite")
    with Memory(config, start_workers=False) as mem:
        assert mem.get(user_id="alice").facts == ()
        assert mem.flush(30) is True
        assert [f.content for f in mem.get(user_id="alice").facts] == ["Lives in Berlin"]


def test_an_in_process_update_not_done_in_time_is_named_as_lost(tmp_path: Path):
    done = _python(_RECORD_AND_EXIT, str(tmp_path / "home"), "shutdown_timeout_seconds=0")
    assert done.returncode == 0, done.stderr
    assert "left 1 (lost; their turns are sent again on the thread's next record)" in done.stderr
    assert "thread 't1', user 'alice'" in done.stderr  # the queue names the key it dropped


def test_close_with_timeout_zero_runs_nothing_and_keeps_durable_updates(tmp_path: Path):
    config = MemoryConfig(home=tmp_path / "home", queue="sqlite", debounce_seconds=0)
    producer = Memory(config, start_workers=False)
    producer.record([("user", "I live in Oslo."), ("assistant", "Ok.")], thread_id="t")
    assert producer.close(timeout=0) is False
    reader = Memory(config, start_workers=False)
    assert reader.status().pending == 1  # a durable queue is read, never run, by status()
    reader.close(timeout=0)
    with Memory(config, start_workers=False) as worker:
        assert worker.flush(30)
        assert worker.get().facts[0].content == "Lives in Oslo"


def test_the_exit_hook_closes_an_open_memory_and_reports_it(tmp_path: Path, caplog):
    from memfold import _exit

    mem = Memory(home=str(tmp_path / "home"), debounce_seconds=30)
    mem.record([("user", "I live in Lima."), ("assistant", "Ok.")], thread_id="t")
    closed = Memory(home=str(tmp_path / "other"))
    closed.close()
    assert mem in _exit._open  # what the atexit hook will close
    assert closed not in _exit._open
    with caplog.at_level("WARNING", logger="memfold"):
        mem._close_at_exit()  # what the hook runs for each open Memory
    assert "ran 1 pending update(s) (0 failed attempt(s)) and left 0" in caplog.text
    assert mem not in _exit._open
    with Memory(home=str(tmp_path / "home")) as again:
        assert again.get().facts[0].content == "Lives in Lima"
