"""``memfold ingest``: inputs it reads, everything checked before anything is stored,
parallel and resumable runs."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import conversation, memfold_process, write_jsonl

from memfold import Memory
from memfold.cli._app import Options
from memfold.extract.base import ChangeSet, Extraction, ExtractionRequest, NewFact, Usage


class SlowExtractor:
    """``remember X`` becomes fact X; counts how many extractions run at once and can fail
    the first attempt of one thread."""

    name = "slow"

    def __init__(self, *, fail_thread: str | None = None, pause: float = 0.05) -> None:
        self.fail_thread = fail_thread
        self.pause = pause
        self.running = 0
        self.most_at_once = 0
        self.order: list[str] = []
        self._lock = threading.Lock()

    def propose(self, request: ExtractionRequest) -> Extraction:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.order.append(str(request.thread_id))
        try:
            time.sleep(self.pause)
            if request.thread_id == self.fail_thread:
                self.fail_thread = None  # fails once; a re-run succeeds
                raise RuntimeError("the model is down")
            facts = tuple(
                NewFact(m.content.removeprefix("remember "), "context", 0.9)
                for m in request.messages
                if m.role == "user" and m.content.startswith("remember ")
            )
            return Extraction(ChangeSet(new_facts=facts), usage=Usage(100, 20))
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def extractor(monkeypatch) -> SlowExtractor:
    spy = SlowExtractor()

    def build_memory(self: Options) -> Memory:
        return Memory(self.settings(), extractor=spy, start_workers=False)

    monkeypatch.setattr(Options, "build_memory", build_memory)
    return spy


def _facts(home: str, user: str | None) -> list[str]:
    with Memory(home=home) as mem:
        return [f.content for f in mem.get(user_id=user).facts]


def test_scopes_run_in_parallel_and_in_file_order_within_a_scope(run, home, tmp_path, extractor):
    rows = [
        conversation(f"{user}-{n}", f"remember {user} fact {n}", user_id=user)
        for n in range(3)
        for user in ("a", "b", "c", "d")
    ]
    path = write_jsonl(tmp_path / "in.jsonl", *rows)
    code, out, _ = run("--home", home, "ingest", "--workers", "4", str(path))
    assert code == 0, out
    assert extractor.most_at_once >= 2
    for user in "abcd":
        assert [t for t in extractor.order if t.startswith(user)] == [
            f"{user}-0",
            f"{user}-1",
            f"{user}-2",
        ]
        assert _facts(home, user) == [f"{user} fact {n}" for n in range(3)]
    assert "LLM tokens: 1,200 prompt + 240 completion" in out


def test_one_worker_runs_one_conversation_at_a_time(run, home, tmp_path, extractor):
    rows = [conversation(f"t{n}", f"remember {n}", user_id=f"u{n}") for n in range(4)]
    path = write_jsonl(tmp_path / "in.jsonl", *rows)
    assert run("--home", home, "ingest", "--workers", "1", str(path))[0] == 0
    assert extractor.most_at_once == 1


def test_a_failure_says_where_it_stopped_and_a_rerun_resumes(run, home, tmp_path, extractor):
    extractor.fail_thread = "t3"
    rows = [conversation(f"t{n}", f"remember item {n}", user_id="rz") for n in range(1, 5)]
    path = write_jsonl(tmp_path / "in.jsonl", *rows)
    code, _, err = run("--home", home, "ingest", str(path))
    assert code == 1
    assert f"{path}:3 (thread 't3', user 'rz') failed: the model is down" in err
    assert "2 of 4 conversations stored before the run stopped" in err
    assert "run the same command again to resume" in err
    assert _facts(home, "rz") == ["item 1", "item 2"]
    code, out, _ = run("--home", home, "ingest", str(path))
    assert code == 0
    assert "2 already seen" in out
    assert _facts(home, "rz") == ["item 1", "item 2", "item 3", "item 4"]


def test_keep_going_runs_past_a_failure_and_lists_it(run, home, tmp_path, extractor):
    extractor.fail_thread = "t2"
    rows = [conversation(f"t{n}", f"remember item {n}", user_id="k") for n in range(1, 4)]
    path = write_jsonl(tmp_path / "in.jsonl", *rows)
    code, out, err = run("--home", home, "ingest", "--keep-going", "--json", str(path))
    assert code == 1
    summary = json.loads(out)
    assert summary["stored"] == 2
    assert [f["threadId"] for f in summary["failed"]] == ["t2"]
    assert "(thread 't2', user 'k') failed" in err
    assert _facts(home, "k") == ["item 1", "item 3"]


def test_reprocess_rebuilds_memory_after_clear(run, home, tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", conversation("t1", "I live in Lisbon.", user_id="p"))
    assert "1 fact added" in run("--home", home, "ingest", str(path))[1]
    run("--home", home, "--user", "p", "clear", "--yes")
    code, out, _ = run("--home", home, "ingest", str(path))
    assert code == 0
    assert "0 facts added" in out
    assert "1 already seen (nothing new; --reprocess to redo)" in out
    code, out, _ = run("--home", home, "ingest", "--reprocess", str(path))
    assert code == 0
    assert "1 fact added" in out
    assert _facts(home, "p") == ["Lives in Lisbon"]
    assert "0 facts added" in run("--home", home, "ingest", "--reprocess", str(path))[1]


def test_reads_stdin_with_a_dash(tmp_path):
    stdin = json.dumps(conversation("t1", "I live in Lisbon.", user_id="s")) + "\n"
    home = str(tmp_path / "h")
    proc = memfold_process("--home", home, "ingest", "-", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    assert "1 fact added" in proc.stdout
    assert _facts(home, "s") == ["Lives in Lisbon"]


def test_a_json_array_of_conversations_is_accepted(run, home, tmp_path):
    rows = [
        conversation("t1", "I live in Lisbon.", user_id="x"),
        conversation("t2", "I use Emacs.", user_id="y"),
    ]
    path = tmp_path / "all.json"
    path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    code, out, _ = run("--home", home, "ingest", str(path))
    assert code == 0
    assert out.startswith("read 2 conversations")


def test_an_array_on_a_jsonl_line_is_explained(run, home, tmp_path):
    path = tmp_path / "in.jsonl"
    line = json.dumps([conversation("t1", "I live in Lisbon.")])
    path.write_text(line + "\n" + line + "\n", encoding="utf-8")
    code, _, err = run("--home", home, "ingest", str(path))
    assert code == 2
    assert f"{path}:1: a JSON array; put one conversation object per line" in err


def test_a_message_with_text_instead_of_content_is_refused(run, home, tmp_path):
    bad = {"thread_id": "t", "messages": [{"role": "user", "text": "I live in Lisbon."}]}
    path = write_jsonl(tmp_path / "in.jsonl", conversation("t0", "I use vim."), bad)
    code, _, err = run("--home", home, "ingest", str(path))
    assert code == 2
    assert f"{path}:2: message 0 has no 'content' (its keys: role, text)" in err
    assert _facts(home, "u") == []


# D16 (reliability.md): every line is checked with the API's id rules and for text that
# can be stored before anything is committed (0.1.0 stored lines 1-2, then failed).
@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"user_id": "al\x00ice"}, "NUL"),
        ({"agent": "co\x00der"}, "NUL"),
        ({"user_id": "\ud800x"}, "not valid Unicode"),
        ({"thread_id": "t\ud800"}, "not valid Unicode"),
    ],
)  # fmt: skip
def test_a_bad_id_or_text_on_line_3_stores_nothing(run, home, tmp_path, bad, expected):
    rows = [conversation("t1", "I live in Oslo."), conversation("t2", "I use vim."),
            {**conversation("t3", "I like tea."), **bad}]  # fmt: skip
    path = tmp_path / "in.jsonl"
    # json.dumps escapes lone surrogates, as a real file from another tool would
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, _, err = run("--home", home, "ingest", str(path))
    assert code == 2, err
    assert f"{path}:3: " in err
    assert expected in err
    assert len(err.strip().splitlines()) == 1
    assert _facts(home, "u") == []


# D17 (reliability.md): deep nesting and huge numbers were a RecursionError traceback.
@pytest.mark.parametrize(
    ("line", "expected"),
    [("[" * 100_000 + "]" * 100_000, "nested too deeply"),
     ('{"thread_id": "t", "n": ' + "9" * 5000 + ', "messages": []}', "digits")],
)  # fmt: skip
def test_deep_nesting_and_huge_numbers_are_one_line_exit_2(tmp_path, line, expected):
    path = tmp_path / "in.jsonl"
    path.write_text(
        json.dumps(conversation("t1", "I live in Oslo.")) + "\n" + line + "\n", encoding="utf-8"
    )
    home = str(tmp_path / "h")
    proc = memfold_process("--home", home, "ingest", str(path))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert f"{path}:2: " in proc.stderr
    assert expected in proc.stderr
    assert not Path(home).exists() or _facts(home, "u") == []


def test_import_of_a_deeply_nested_file_is_one_line_exit_2(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"facts": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    proc = memfold_process("--home", str(tmp_path / "h"), "import", "--yes", str(path))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "nested too deeply" in proc.stderr


def test_a_lone_surrogate_in_message_text_is_stored_as_a_replacement_character(run, home, tmp_path):
    # capture makes text storable (issue 10), so the line is folded in, not refused later
    rows = [conversation("t1", "I live in Oslo."),
            {**conversation("t2", "I like tea."), "messages": [
                {"role": "user", "content": "I live in Li\udc80sbon", "id": "m\ud800"},
                {"role": "assistant", "content": "Ok."}]}]  # fmt: skip
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, out, err = run("--home", home, "ingest", str(path))
    assert code == 0, err
    assert out.startswith("read 2 conversations")
    assert "Traceback" not in err
