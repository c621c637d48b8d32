"""``memfold import`` (S3): refuses what it does not recognise, asks before replacing,
merges on request, and leniently repairs a DeerFlow file with a bad item."""

from __future__ import annotations

import json

import pytest

DEERFLOW = {
    "version": "1.0",
    "lastUpdated": "2026-05-01T10:00:00Z",
    "user": {
        "workContext": {"summary": "Data engineer at Acme", "updatedAt": ""},
        "personalContext": {"summary": 42, "updatedAt": ""},
        "topOfMind": {"summary": "", "updatedAt": ""},
    },
    "history": {},
    "facts": [
        {"id": "f1", "content": "Prefers concise answers", "category": "preference",
         "confidence": 0.9, "createdAt": "2026-05-01T10:00:00Z", "source": "thread-1"},
        {"id": "f2", "content": None, "category": "context", "confidence": 0.8},
        {"id": "f3", "content": "Uses Python", "category": "knowledge", "confidence": None},
        {"id": "f4", "content": "Lives in Berlin", "category": "context", "confidence": 1.5},
    ],
}  # fmt: skip


@pytest.fixture
def deerflow(tmp_path):
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(DEERFLOW), encoding="utf-8")
    return path


def _facts(run, home, user="dana"):
    _, raw, _ = run("--home", home, "--user", user, "facts", "list", "--json")
    return {f["content"]: f for f in json.loads(raw)}


def test_a_deerflow_file_with_bad_items_is_refused_strictly_naming_the_item(run, home, deerflow):
    code, _, err = run("--home", home, "--user", "dana", "import", str(deerflow))
    assert code == 1
    assert "user.personalContext.summary: expected a string" in err  # the first bad item
    assert "--lenient" in err
    assert _facts(run, home) == {}


def test_lenient_import_repairs_and_reports_every_change(run, home, deerflow):
    code, out, err = run("--home", home, "--user", "dana", "import", "--lenient", str(deerflow))
    assert code == 0
    assert "imported 3 facts" in out
    assert "DeerFlow v1 memory.json" in out
    assert "repaired: facts[1] (id 'f2'): no text content (None); dropped" in err
    assert "facts[2] ('Uses Python').confidence=None: not a number; set to 0.5" in err
    assert "facts[3] ('Lives in Berlin').confidence=1.5: out of range; clamped to 1.0" in err
    assert "user.personalContext.summary=42: a number; stored as text" in err
    assert "4 items dropped or repaired" in err
    facts = _facts(run, home)
    assert facts["Uses Python"]["confidence"] == 0.5
    assert facts["Lives in Berlin"]["confidence"] == 1.0
    _, shown, _ = run("--home", home, "--user", "dana", "show")
    assert "Work: Data engineer at Acme" in shown


@pytest.mark.parametrize(
    "document",
    [{"results": [{"id": "1", "memory": "likes tea", "user_id": "dana"}]}, {}, {"version": "1.0"},
     [{"content": "likes tea"}]],
)  # fmt: skip
def test_an_unrecognised_document_is_refused_and_memory_kept(run, home, tmp_path, document):
    run("--home", home, "--user", "dana", "facts", "add", "Owns a cat")
    path = tmp_path / "other.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    code, _, err = run("--home", home, "--user", "dana", "import", "--yes", str(path))
    assert code == 1
    assert "memfold export or a DeerFlow v1 memory.json" in err
    assert list(_facts(run, home)) == ["Owns a cat"]


def test_replacing_a_non_empty_scope_needs_yes_and_says_what_it_replaced(run, home, tmp_path):
    run("--home", home, "--user", "dana", "facts", "add", "Owns a cat")
    path = tmp_path / "memory.json"
    facts = [{"id": "a", "content": "Knows Go", "confidence": 0.8},
             {"id": "b", "content": "Likes tea", "confidence": 0.8}]  # fmt: skip
    path.write_text(json.dumps({"facts": facts}), encoding="utf-8")
    code, _, err = run("--home", home, "--user", "dana", "import", str(path))
    assert code == 1
    assert "already has 1 fact and 0 summaries; pass --yes" in err
    assert "--merge" in err
    assert list(_facts(run, home)) == ["Owns a cat"]
    code, out, _ = run("--home", home, "--user", "dana", "import", "--yes", str(path))
    assert code == 0
    assert out.startswith("replaced 1 fact and 0 summaries with 2 facts and 0 summaries from")
    assert sorted(_facts(run, home)) == ["Knows Go", "Likes tea"]


def test_merge_adds_new_facts_and_keeps_the_stored_ones(run, home, tmp_path):
    run("--home", home, "--user", "dana", "facts", "add", "Owns a cat")
    run("--home", home, "--user", "dana", "facts", "add", "Likes tea")
    path = tmp_path / "memory.json"
    facts = [{"id": "a", "content": "Knows Go", "confidence": 0.8},
             {"id": "b", "content": "likes tea.", "confidence": 0.8}]  # fmt: skip
    path.write_text(json.dumps({"facts": facts}), encoding="utf-8")
    code, out, _ = run("--home", home, "--user", "dana", "import", "--merge", str(path))
    assert code == 0
    assert "1 fact added, 1 already present" in out
    assert sorted(_facts(run, home)) == ["Knows Go", "Likes tea", "Owns a cat"]


def test_confirming_on_a_terminal_replaces(run, home, tmp_path, monkeypatch):
    run("--home", home, "--user", "dana", "facts", "add", "Owns a cat")
    path = tmp_path / "memory.json"
    path.write_text(json.dumps({"facts": [{"id": "a", "content": "Knows Go"}]}), encoding="utf-8")
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("click.confirm", lambda *a, **k: False)
    code, _, err = run("--home", home, "--user", "dana", "import", str(path))
    assert code == 1
    assert "not confirmed" in err
    monkeypatch.setattr("click.confirm", lambda *a, **k: True)
    assert run("--home", home, "--user", "dana", "import", str(path))[0] == 0
    assert list(_facts(run, home)) == ["Knows Go"]


def test_snake_case_deerflow_fact_keys_are_read(run, home, tmp_path):
    fact = {"id": "u1", "content": "Prefers short answers", "category": "preference",
            "confidence": 0.85, "source_thread_id": "thread_abc",
            "created_at": "2026-06-30T12:00:00Z"}  # fmt: skip
    path = tmp_path / "memory.json"
    path.write_text(json.dumps({"version": "1.0", "facts": [fact]}), encoding="utf-8")
    assert run("--home", home, "--user", "dana", "import", str(path))[0] == 0
    stored = _facts(run, home)["Prefers short answers"]
    assert stored["source"] == "thread_abc"
    assert stored["createdAt"] == "2026-06-30T12:00:00Z"


def test_export_import_round_trip_keeps_everything(run, home, tmp_path):
    run("--home", home, "--user", "a", "facts", "add", "Has a cat", "--category", "preference")
    out = tmp_path / "a.json"
    assert run("--home", home, "--user", "a", "export", "-o", str(out))[0] == 0
    code, text, _ = run("--home", home, "--user", "b", "import", str(out))
    assert code == 0
    assert "memfold export" in text
    assert _facts(run, home, "b")["Has a cat"]["category"] == "preference"
