"""Forgetting in summaries: rebuild clauses that were facts, hold out prose that still
mentions removed content, release a hold-out when a rewrite drops it."""

from __future__ import annotations

import time
from types import MappingProxyType

from memfold._text import terms
from memfold.forgetting import HELD_OUT_KEY, Gone, forget, held_out, release, without_hold
from memfold.model import Fact, Summary

NOW = "2026-12-01T10:00:00Z"


def sections(**texts: str) -> dict[str, Summary]:
    return {name: Summary(text, "2026-11-01T00:00:00Z") for name, text in texts.items()}


def test_a_clause_that_was_the_removed_fact_is_dropped_and_the_rest_kept() -> None:
    summaries = sections(
        personalContext="Name is Alice; Prefers concise answers; Lives in Berlin; Speaks German"
    )
    out, changes = forget(summaries, [Gone("f1", "Lives in Berlin")], now_iso=NOW)
    assert out["personalContext"].summary == "Name is Alice; Prefers concise answers; Speaks German"
    assert out["personalContext"].updated_at == NOW
    assert held_out(out["personalContext"]) is None
    assert [c.section for c in changes] == ["personalContext"]
    assert "rebuilt" in changes[0].reason


def test_an_edit_replaces_the_clause_with_the_new_content() -> None:
    summaries = sections(personalContext="Name is Alice; Prefers concise answers")
    out, _ = forget(summaries, [Gone("f1", "Name is Alice", "Name is Alice Smith")], now_iso=NOW)
    assert out["personalContext"].summary == "Name is Alice Smith; Prefers concise answers"
    assert held_out(out["personalContext"]) is None


def test_a_replacement_already_in_the_summary_is_not_written_twice() -> None:
    summaries = sections(personalContext="Lives in Paris; Lives in Berlin")
    out, _ = forget(summaries, [Gone("f1", "Lives in Berlin", "Lives in Paris")], now_iso=NOW)
    assert out["personalContext"].summary == "Lives in Paris"


def test_prose_that_mentions_the_removed_fact_is_held_out_not_rewritten() -> None:
    prose = "Alice is a data engineer at Zalando. She lives in Berlin with her cat."
    out, changes = forget(
        sections(personalContext=prose), [Gone("f1", "Lives in Berlin")], now_iso=NOW
    )
    summary = out["personalContext"]
    assert summary.summary == prose  # kept for the next rewrite, never injected meanwhile
    hold = held_out(summary)
    assert hold is not None
    assert hold.removed == ("Lives in Berlin",)
    assert hold.since == NOW
    assert "held out" in changes[0].reason


def test_a_supersession_whose_replacement_shares_the_words_holds_nothing() -> None:
    # "Dislikes Python" supersedes "Likes Python": the prose mention of Python is not stale
    out, changes = forget(
        sections(workContext="Works mostly in Python for data pipelines"),
        [Gone("f1", "Likes Python", "Dislikes Python")],
        now_iso=NOW,
    )
    assert held_out(out["workContext"]) is None
    assert changes == []


def test_chinese_prose_mentioning_the_removed_city_is_held_out() -> None:
    out, _ = forget(
        sections(personalContext="用户是一名老师，住在北京，喜欢爬山"),
        [Gone("f1", "住在北京")],
        now_iso=NOW,
    )
    assert held_out(out["personalContext"]) is not None
    other, _ = forget(
        sections(personalContext="用户住在上海，喜欢爬山"), [Gone("f1", "住在北京")], now_iso=NOW
    )
    assert held_out(other["personalContext"]) is None  # 住在 alone is not the removed fact


def test_unrelated_sections_and_empty_ones_are_untouched() -> None:
    summaries = sections(workContext="Builds compilers", personalContext="")
    out, changes = forget(summaries, [Gone("f1", "Lives in Berlin")], now_iso=NOW)
    assert out == summaries
    assert changes == []


def test_a_hold_out_whose_mention_a_later_removal_rebuilt_away_is_lifted() -> None:
    summaries = sections(personalContext="Name is Alice; Lives in Berlin")
    first, _ = forget(
        summaries, [Gone("c1", "Correction: I live in Berlin, not Munich")], now_iso=NOW
    )
    assert held_out(first["personalContext"]) is not None
    second, changes = forget(first, [Gone("f1", "Lives in Berlin")], now_iso=NOW)
    assert second["personalContext"].summary == "Name is Alice"
    assert held_out(second["personalContext"]) is None
    assert HELD_OUT_KEY not in second["personalContext"].extra
    assert changes


def test_release_lifts_a_hold_when_the_rewrite_no_longer_mentions_it() -> None:
    held, _ = forget(
        sections(personalContext="She lives in Berlin and climbs"),
        [Gone("f1", "Lives in Berlin")],
        now_iso=NOW,
    )
    rewritten = {
        "personalContext": Summary("She climbs on weekends", NOW, held["personalContext"].extra)
    }
    out, changes = release(rewritten, ["personalContext"], live=[])
    assert held_out(out["personalContext"]) is None
    assert "injected again" in changes[0].reason


def test_release_keeps_the_hold_while_the_rewrite_still_says_it() -> None:
    held, _ = forget(
        sections(personalContext="She lives in Berlin"),
        [Gone("f1", "Lives in Berlin")],
        now_iso=NOW,
    )
    rewritten = {"personalContext": Summary("Based in Berlin", NOW, held["personalContext"].extra)}
    out, _ = release(rewritten, ["personalContext"], live=[])
    assert held_out(out["personalContext"]) is not None


def test_release_accepts_a_word_a_live_fact_supports() -> None:
    held, _ = forget(
        sections(personalContext="She lives in Berlin"),
        [Gone("f1", "Lives in Berlin")],
        now_iso=NOW,
    )
    rewritten = {
        "personalContext": Summary("Works at a Berlin startup", NOW, held["personalContext"].extra)
    }
    live = [Fact("f2", "Works at a Berlin startup")]
    out, _ = release(rewritten, ["personalContext"], live=live)
    assert held_out(out["personalContext"]) is None


def test_without_hold_keeps_other_extra_fields() -> None:
    summary = Summary("x", "", MappingProxyType({"note": 1, HELD_OUT_KEY: {"removed": ["a"]}}))
    assert dict(without_hold(summary).extra) == {"note": 1}
    plain = Summary("x")
    assert without_hold(plain) is plain


def test_terms_and_clause_splitting_stay_linear_on_hostile_input() -> None:
    hostile = ("a" + " " * 50_000 + "!" * 50_000 + "." * 50_000 + "-a") * 2
    start = time.perf_counter()
    terms(hostile)
    forget(sections(workContext=hostile), [Gone("f1", "a" + " " * 1000 + "b")], now_iso=NOW)
    assert time.perf_counter() - start < 5.0  # generous: quadratic would take minutes
