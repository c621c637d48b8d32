"""``memfold history``, ``why``, ``summary show|edit|clear``, ``forget-user`` and
``context --explain`` on every durable store (json, sqlite, postgres)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memfold import Memory, MemoryConfig
from memfold.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "conversations.jsonl"


def run(
    capsys: pytest.CaptureFixture[str], *args: str, stdin: str | None = None
) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(params=["json", "sqlite", "postgres"])
def home(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMFOLD_STORAGE", request.param)
    if request.param == "postgres":
        monkeypatch.setenv("MEMFOLD_DSN", request.getfixturevalue("postgres_dsn"))
    return str(tmp_path / "home")


def fact_id(capsys: pytest.CaptureFixture[str], home: str, content: str) -> str:
    _, out, _ = run(capsys, "--home", home, "--user", "alice", "facts", "list", "--json")
    return next(f["id"] for f in json.loads(out) if f["content"] == content)


@pytest.fixture
def moved(tmp_path: Path) -> str:
    """alice says where she lives, then that she moved."""
    lines = [
        {"thread_id": "t1", "user_id": "alice", "messages": [
            {"role": "user", "content": "Hi, I'm Alice. I live in Berlin.", "id": "m1"},
            {"role": "assistant", "content": "Nice to meet you."}]},
        {"thread_id": "t2", "user_id": "alice", "messages": [
            {"role": "user", "content": "I live in Paris now.", "id": "m2"},
            {"role": "assistant", "content": "Congratulations!"}]},
    ]  # fmt: skip
    path = tmp_path / "moved.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return str(path)


def test_history_and_why_show_where_a_fact_came_from(capsys, home, moved) -> None:
    assert run(capsys, "--home", home, "ingest", moved)[0] == 0
    paris = fact_id(capsys, home, "Lives in Paris")
    code, out, _ = run(capsys, "--home", home, "--user", "alice", "why", paris)
    assert code == 0
    assert f"{paris}: 'Lives in Paris' (live)" in out
    assert "from: extraction/rules" in out
    assert "the user said: 'I live in Paris now.'" in out
    assert "messages: id:m2" in out
    assert "superseded: " in out
    assert "'Lives in Berlin'" in out
    code, out, _ = run(capsys, "--home", home, "--user", "alice", "history", paris, "--json")
    assert code == 0
    # its own event and the one of the fact it superseded, which links to it
    events = json.loads(out)
    assert [e["kind"] for e in events] == ["added", "superseded"]
    assert events[1]["replacedBy"] == paris
    code, out, _ = run(capsys, "--home", home, "--user", "alice", "history", "--limit", "2")
    assert code == 0
    assert len(out.strip().splitlines()) == 2
    code, _, err = run(capsys, "--home", home, "--user", "alice", "why", "fact_nope")
    assert code == 2
    assert "fact_nope" in err


def test_facts_rm_then_context_has_no_trace_and_summary_edit_corrects(capsys, home, moved) -> None:
    """B3 through the CLI: the Personal summary no longer carries a removed fact."""
    run(capsys, "--home", home, "ingest", moved)
    summary = "Name is Alice; Lives in Paris; Likes jazz"
    run(capsys, "--home", home, "--user", "alice", "summary", "edit", "personal", summary)
    run(
        capsys,
        "--home",
        home,
        "--user",
        "alice",
        "facts",
        "rm",
        fact_id(capsys, home, "Lives in Paris"),
    )
    _, block, _ = run(capsys, "--home", home, "--user", "alice", "context")
    assert "Paris" not in block
    assert "- Personal: Name is Alice; Likes jazz" in block
    code, out, _ = run(
        capsys, "--home", home, "--user", "alice", "summary", "edit", "personal", "Likes hiking"
    )
    assert (code, out.strip()) == (0, "personalContext: Likes hiking")
    code, out, _ = run(capsys, "--home", home, "--user", "alice", "summary", "show", "personal")
    assert out.strip() == "personalContext (Personal): Likes hiking"
    run(capsys, "--home", home, "--user", "alice", "summary", "edit", "work", "Data engineer")
    code, out, _ = run(capsys, "--home", home, "--user", "alice", "summary", "clear", "work")
    assert (code, out.strip()) == (0, "workContext cleared")
    _, block, _ = run(capsys, "--home", home, "--user", "alice", "context")
    assert "- Personal: Likes hiking" in block
    assert "- Work:" not in block
    code, _, err = run(capsys, "--home", home, "--user", "alice", "summary", "edit", "hobbies", "x")
    assert code == 2
    assert "workContext" in err


def test_context_explain_prints_the_report_as_a_table_or_json(capsys, home) -> None:
    run(capsys, "--home", home, "ingest", str(EXAMPLES))
    code, table, _ = run(
        capsys, "--home", home, "--user", "alice", "context", "--explain", "--max-tokens", "150"
    )
    assert code == 0
    first, header, *rows = table.splitlines()
    assert first.endswith("dropped")
    assert header.split() == ["kind", "id", "tokens", "reason", "content", "why"]
    assert any(r.startswith("in ") for r in rows)
    assert any(r.startswith("out") and "no room left within max_tokens" in r for r in rows)
    _, data, _ = run(
        capsys,
        "--home",
        home,
        "--user",
        "alice",
        "context",
        "--explain",
        "--json",
        "--max-tokens",
        "150",
    )
    report = json.loads(data)
    _, block, _ = run(capsys, "--home", home, "--user", "alice", "context", "--max-tokens", "150")
    assert report["text"] == block.rstrip("\n")
    assert report["budget"] == 150


def test_forget_user_needs_yes_and_erases_every_agent(capsys, home, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    run(capsys, "--home", home, "ingest", str(EXAMPLES))
    run(capsys, "--home", home, "--user", "alice", "--agent", "coder", "facts", "add", "Uses vim")
    code, _, err = run(capsys, "--home", home, "forget-user", "alice")
    assert code == 1  # declined: a refusal, not a usage error (issue 11)
    assert "aborted" in err
    code, out, _ = run(capsys, "--home", home, "forget-user", "alice", "--yes", "--json")
    assert code == 0
    assert json.loads(out)["scopes"] == 2
    _, out, _ = run(capsys, "--home", home, "--user", "alice", "history")
    assert out.strip() == "(no history)"
    _, block, _ = run(capsys, "--home", home, "--user", "wei", "context")
    assert "上海" in block
    code, _, err = run(capsys, "--home", home, "forget-user", "--yes")
    assert code == 2
    assert "--default-user" in err


def test_forget_user_as_a_command_exits_cleanly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory(MemoryConfig(home=home, storage="json")) as mem:
        mem.add_fact("Owns a boat", user_id="zed")
    env = {**os.environ, "MEMFOLD_STORAGE": "json"}
    cmd = [sys.executable, "-m", "memfold.cli", "--home", str(home), "forget-user", "zed"]
    refused = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, input="n\n")
    assert refused.returncode == 1  # declined: a refusal, not a usage error (issue 11)
    assert "aborted" in refused.stderr
    done = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, input="y\n")
    assert done.returncode == 0, done.stderr
    assert "erased user 'zed': 1 scope(s), 0 queued update(s)" in done.stdout
    assert not any((home / "users").iterdir())


def test_summary_edit_reads_the_text_from_a_pipe(capsys, home, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Plays the cello\n"))
    code, out, _ = run(capsys, "--home", home, "--user", "ana", "summary", "edit", "focus")
    assert (code, out.strip()) == (0, "topOfMind: Plays the cello")
    _, data, _ = run(capsys, "--home", home, "--user", "ana", "summary", "show", "--json")
    assert json.loads(data)["topOfMind"] == "Plays the cello"
    _, events, _ = run(capsys, "--home", home, "--user", "ana", "history", "--json")
    assert [(e["kind"], e["actor"], e["section"]) for e in json.loads(events)] == [
        ("summary", "manual", "topOfMind")
    ]
