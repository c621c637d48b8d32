"""Part 6: ``explain_context`` returns exactly what ``context()`` injects, its exact token
count and budget, and why every fact and summary section was included or dropped."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from memfold import ContextReport, Memory
from memfold.context_report import REASONS
from memfold.tokens import get_counter

if TYPE_CHECKING:
    from conftest import MakeMemory  # tests/audit/conftest.py


def seeded(mem: Memory) -> None:
    """Two summaries, 30 ordinary facts and 40 corrections, in one commit."""
    facts = [
        {"id": f"fact_p{n:02d}", "content": f"Prefers option {n} for problem {n} in the codebase",
         "category": "preference", "confidence": 0.9, "createdAt": f"2026-01-01T00:00:{n:02d}Z"}
        for n in range(30)
    ] + [
        {"id": f"fact_c{n:02d}", "content": f"Do not suggest tool {n}; banned after incident {n}",
         "category": "correction", "confidence": 0.97, "createdAt": f"2026-01-01T00:01:{n:02d}Z"}
        for n in range(40)
    ]  # fmt: skip
    user = {
        "workContext": {"summary": "Backend engineer at a fintech company, " * 6},
        "personalContext": {"summary": "Lives in Lisbon and speaks Portuguese"},
    }
    mem.import_document({"user": user, "facts": facts}, user_id="amy")


def test_the_report_matches_the_injected_block_on_every_store(make_mem: MakeMemory) -> None:
    mem = make_mem(max_injection_tokens=600, guaranteed_token_budget=150)
    seeded(mem)
    report = mem.explain_context(user_id="amy", max_tokens=300)
    assert report.text == mem.context(user_id="amy", max_tokens=300)
    assert report.included
    assert report.dropped


@pytest.mark.parametrize("storage", ["json"], indirect=True)
@pytest.mark.parametrize("budget", [None, 2000, 400, 200, 120, 60])
def test_the_report_text_is_exactly_the_injected_block(
    make_mem: MakeMemory, budget: int | None
) -> None:
    mem = make_mem(max_injection_tokens=600, guaranteed_token_budget=150)
    seeded(mem)
    report = mem.explain_context(user_id="amy", max_tokens=budget)
    assert isinstance(report, ContextReport)
    assert report.text == mem.context(user_id="amy", max_tokens=budget)
    assert report.tokens == get_counter("cl100k_base").count(report.text)
    assert report.budget == (600 if budget is None else budget)
    assert report.tokens <= report.budget
    doc = mem.get(user_id="amy")
    every = {i.id for i in (*report.included, *report.dropped)}
    assert every == {f.id for f in doc.facts} | {"workContext", "personalContext"}
    assert not {i.id for i in report.included} & {i.id for i in report.dropped}
    assert {i.reason for i in (*report.included, *report.dropped)} <= set(REASONS)
    for item in report.included:
        assert item.kind != "fact" or item.content in report.text


@pytest.mark.parametrize("storage", ["json"], indirect=True)
def test_dropped_items_say_why(make_mem: MakeMemory) -> None:
    mem = make_mem(max_injection_tokens=600, guaranteed_token_budget=150)
    seeded(mem)
    report = mem.explain_context(user_id="amy")
    reasons = {item.id: item.reason for item in report.dropped}
    corrections = [i for i in (*report.included, *report.dropped) if i.category == "correction"]
    # first from their own budget, then (like any fact) from what is left
    assert {i.reason for i in corrections if i.included} == {"guaranteed", "fits"}
    assert "guaranteed_pool_full" in {i.reason for i in corrections if not i.included}
    assert "budget" in reasons.values()
    assert report.guaranteed_used <= report.guaranteed_budget == 150
    included_facts = [i for i in report.included if i.kind == "fact"]
    lines = [line for line in report.text.splitlines() if line.startswith("- [")]
    assert len(included_facts) == len(lines)
    assert all(i.content in line for i, line in zip(included_facts, lines, strict=True))


@pytest.mark.parametrize("storage", ["json"], indirect=True)
def test_a_truncated_summary_is_included_and_marked(make_mem: MakeMemory) -> None:
    mem = make_mem()
    mem.set_summary("work", "Backend engineer at a fintech company. " * 30, user_id="amy")
    report = mem.explain_context(user_id="amy", max_tokens=80)
    (work,) = report.included
    assert (work.id, work.reason) == ("workContext", "truncated")
    assert report.text.count("…") == 1


def test_an_empty_memory_reports_an_empty_block(make_mem: MakeMemory) -> None:
    report = make_mem().explain_context(user_id="nobody")
    assert (report.text, report.tokens, report.included, report.dropped) == ("", 0, (), ())


@pytest.mark.parametrize("storage", ["json"], indirect=True)
def test_the_report_is_json_ready(make_mem: MakeMemory) -> None:
    mem = make_mem()
    seeded(mem)
    data = json.loads(json.dumps(mem.explain_context(user_id="amy", max_tokens=300).to_dict()))
    assert data["userId"] == "amy"
    assert data["text"].startswith("<user_memory>")
    assert {"kind", "id", "content", "included", "reason", "tokens"} <= set(data["dropped"][0])


@pytest.mark.parametrize("storage", ["json"], indirect=True)
def test_a_query_orders_the_report_like_the_block(make_mem: MakeMemory) -> None:
    mem = make_mem(max_injection_tokens=600, guaranteed_token_budget=150)
    seeded(mem)
    query = "which option for problem 17?"
    report = mem.explain_context(user_id="amy", max_tokens=400, query=query)
    assert report.text == mem.context(user_id="amy", max_tokens=400, query=query)
    plain = mem.explain_context(user_id="amy", max_tokens=400)
    assert "fact_p17" in [i.id for i in report.included]
    assert "fact_p17" not in [i.id for i in plain.included]
    with pytest.raises(TypeError, match="query"):
        mem.explain_context(user_id="amy", query=17)  # type: ignore[arg-type]
