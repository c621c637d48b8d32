"""A redaction is visible in the change history: which rule fired, never the value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import Memory, MemoryConfig
from memfold.cli import main

GROQ = "gsk_" + "o69aH2lz8APjGnRx2zbjTIdvvBEaBgnJnTzUjqNzmulA8Rns37mb"
OPENAI = "sk-proj-" + "Q7vN2mXc9LpR4tYw8ZbK3sHd6FgJ1aUe5iOo0"


def _memory(home: Path) -> Memory:
    return Memory(MemoryConfig(home=home, debounce_seconds=1), start_workers=False)


def test_a_manual_fact_with_a_secret_records_the_rule_and_not_the_value(tmp_path: Path) -> None:
    with _memory(tmp_path) as mem:
        fact = mem.add_fact(f"Deploys staging with GROQ_API_KEY={GROQ}", user_id="alice")
        events = mem.history(user_id="alice", fact_id=fact.id)
    assert [e.kind for e in events] == ["added"]
    assert events[0].redactions == ("groq_api_key",)
    data = json.dumps([e.to_dict() for e in events])
    assert json.loads(data)[0]["redactions"] == ["groq_api_key"]
    assert GROQ not in data
    assert GROQ[4:20] not in data


def test_an_extracted_fact_records_what_was_redacted_from_the_users_words(
    tmp_path: Path,
) -> None:
    turns = [
        {"role": "user", "content": f"I'm a data engineer. My OpenAI key is {OPENAI}"},
        {"role": "assistant", "content": "Noted; please rotate that key."},
    ]
    with _memory(tmp_path) as mem:
        mem.update(turns, thread_id="t1", user_id="alice")
        events = mem.history(user_id="alice")
    added = [e for e in events if e.kind == "added"]
    assert added, "the rule extractor learned the role"
    assert any("openai_key" in e.redactions for e in added)
    dumped = json.dumps([e.to_dict() for e in events])
    assert OPENAI not in dumped
    assert "[REDACTED:openai_key]" in dumped  # the excerpt says where the secret was


def test_an_event_without_a_secret_lists_no_redactions(tmp_path: Path) -> None:
    with _memory(tmp_path) as mem:
        mem.add_fact("Prefers tabs over spaces", user_id="alice")
        (event,) = mem.history(user_id="alice")
    assert event.redactions == ()
    assert "redactions" not in event.to_dict()


def test_memfold_history_shows_the_redaction_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = str(tmp_path / "home")
    with _memory(Path(home)) as mem:
        mem.add_fact(f"CI uses GROQ_API_KEY={GROQ}", user_id="alice")
    code: object = 0
    try:
        main(["--home", home, "--user", "alice", "history"])
    except SystemExit as exc:
        code = exc.code
    assert code in (0, None)
    out = capsys.readouterr().out
    assert "<redacted: groq_api_key>" in out
    assert GROQ not in out
