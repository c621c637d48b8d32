"""Labelled corpora: the documented JSON-lines format, and errors that name line and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold.errors import CorpusError
from memfold.eval import load_corpus, parse_corpus

CORPORA = Path(__file__).resolve().parents[2] / "corpora" / "extraction"


def _line(**overrides: object) -> str:
    data: dict[str, object] = {
        "id": "c1",
        "messages": [
            {"role": "user", "content": "I'm vegan"},
            {"role": "assistant", "content": "Noted."},
        ],
        "expect": [{"terms": ["vegan"], "category": "context"}],
    }
    data.update(overrides)
    return json.dumps(data)


def _without(key: str) -> str:
    data = json.loads(_line())
    del data[key]
    return json.dumps(data)


def test_a_line_becomes_a_conversation_with_alternatives_and_defaults() -> None:
    (conversation,) = parse_corpus(
        [_line(expect=[{"terms": ["Leeds|利兹", "lives"], "category": "Context"}])]
    )
    assert conversation.lang == "en"
    assert conversation.expect[0].terms == (("Leeds", "利兹"), ("lives",))
    assert conversation.expect[0].category == "context"
    assert conversation.expect[0].label == "Leeds|利兹 + lives"
    assert (conversation.allowed, conversation.traps, conversation.has_traps) == ((), (), False)


def test_blank_and_comment_lines_are_skipped() -> None:
    assert len(parse_corpus(["", "// a note", _line(), "   "])) == 1


BAD = [
    ("not json", "not valid JSON (Expecting value, column 1)"),
    ("[1, 2]", "must be a JSON object"),
    (_line(id=""), "'id' is required"),
    (_line(lang="fr"), "'lang' is 'fr'"),
    (_line(messages=[]), "'messages' is required"),
    (_line(messages=[{"content": "x"}]), "messages[0] must be an object with a 'role'"),
    (_line(messages=[{"role": "user", "content": "x"}]), "needs a user and an assistant"),
    (
        _line(expect=None) and json.dumps({"id": "c", "messages": json.loads(_line())["messages"]}),
        "'expect' is",
    ),
    (_line(expect=[{"terms": ["x"]}]), "expect[0]: 'category' is required"),
    (_line(expect=[{"terms": [], "category": "goal"}]), "'terms' must be a non-empty list"),
    (_line(expect=[{"terms": ["|"], "category": "goal"}]), "nothing but '|'"),
    (_line(traps="Kafka"), "'traps' must be a list"),
    (_line(colour="red"), "unknown keys ['colour']"),
    (_line(tags="short"), "'tags' must be a list of strings"),
]


@pytest.mark.parametrize(("line", "problem"), BAD)
def test_a_bad_line_is_a_corpus_error_naming_the_line_and_the_problem(
    line: str, problem: str
) -> None:
    with pytest.raises(CorpusError) as caught:
        parse_corpus([_line(id="ok"), line], "my.jsonl")
    assert "corpus my.jsonl, line 2" in str(caught.value)
    assert problem in str(caught.value)
    assert caught.value.line == 2


def test_a_repeated_id_names_both_lines() -> None:
    with pytest.raises(CorpusError, match="id 'c1' is already used on line 1"):
        parse_corpus([_line(), _line()])


def test_an_empty_or_missing_file_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="holds no conversation"):
        load_corpus(empty)
    with pytest.raises(CorpusError, match="cannot be read"):
        load_corpus(tmp_path / "missing.jsonl")


def test_shipped_corpora_are_valid_and_the_realistic_one_is_mostly_traps_and_three_languages() -> (
    None
):
    tune = load_corpus(CORPORA / "realistic-tune.jsonl")
    held = load_corpus(CORPORA / "realistic-heldout.jsonl")
    everything = tune + held
    assert len(everything) >= 150
    assert len(held) * 3 >= len(everything) * 0.9  # about a third held out
    assert {c.lang for c in everything} == {"en", "zh", "mixed"}
    traps = sum(1 for c in everything if c.has_traps) / len(everything)
    assert 0.35 <= traps <= 0.5
    assert {c.domain for c in everything} >= {
        "coding", "travel", "writing", "support", "cooking", "finance", "health", "study",
    }  # fmt: skip
    assert not {c.id for c in tune} & {c.id for c in held}
    assert len(load_corpus(CORPORA / "known-phrasings.jsonl")) == 28
