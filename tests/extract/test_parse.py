"""Tolerant parsing of extraction replies (REFERENCE defects 4 and 7)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from memfold.errors import ExtractionError
from memfold.extract._parse import normalise_confidence, parse_reply

REFS = {"f1": "fact_aaaa", "f2": "fact_bbbb"}


def fact(content: str = "Prefers tea", confidence: Any = 0.9, **extra: Any) -> dict[str, Any]:
    return {
        "content": content,
        "category": "preference",
        "confidence": confidence,
        "sourceError": None,
        "scope": "user",
        "durability": "durable",
        **extra,
    }


def reply(**parts: Any) -> str:
    return json.dumps({"newFacts": [], "factsToRemove": [], **parts})


def test_plain_json_reply_gives_facts_summaries_and_removals() -> None:
    text = reply(
        user={
            "workContext": {
                "shouldUpdate": True,
                "summary": " Data engineer ",
                "scope": "user",
                "durability": "durable",
            },
            "topOfMind": {"shouldUpdate": False, "summary": "ignored"},
        },
        newFacts=[fact()],
        factsToRemove=[{"ref": "f2", "reason": "outdated"}],
    )
    changes = parse_reply(text, refs=REFS)
    assert [(s.section, s.summary) for s in changes.summaries] == [("workContext", "Data engineer")]
    assert changes.new_facts[0].content == "Prefers tea"
    assert changes.new_facts[0].confidence == 0.9
    assert changes.removals[0].fact_id == "fact_bbbb"
    assert changes.removals[0].reason == "outdated"
    assert changes.removals_allowed


def test_json_between_prose_is_found() -> None:
    text = "Here is what I found {not json} in the chat:\n" + reply(newFacts=[fact()]) + "\nDone."
    assert parse_reply(text, refs=REFS).new_facts[0].content == "Prefers tea"


def test_json_inside_code_fence_is_found() -> None:
    text = "```json\n" + reply(newFacts=[fact("Uses Vim")]) + "\n```"
    assert parse_reply(text, refs=REFS).new_facts[0].content == "Uses Vim"


def test_thinking_trace_before_json_is_skipped_even_if_it_holds_json() -> None:
    trace = '<think>maybe {"newFacts": [{"content": "wrong"}]} no</think>\n'
    changes = parse_reply(trace + reply(newFacts=[fact("Right one")]), refs=REFS)
    assert [f.content for f in changes.new_facts] == ["Right one"]


def test_list_of_content_blocks_is_flattened() -> None:
    body = reply(newFacts=[fact()])
    blocks = [
        {"type": "reasoning", "text": "{}"},
        {"type": "text", "text": body[:10]},
        {"type": "text", "text": body[10:]},
    ]
    assert len(parse_reply(blocks, refs=REFS).new_facts) == 1


def test_first_object_with_reply_keys_wins_over_unrelated_objects() -> None:
    text = '{"note": "x"} ' + reply(newFacts=[fact("A")]) + " " + reply(newFacts=[fact("B")])
    assert [f.content for f in parse_reply(text, refs=REFS).new_facts] == ["A"]


@pytest.mark.parametrize("text", ["", "   ", "I found nothing to remember.", '{"note": 1}'])
def test_reply_without_usable_object_raises_extraction_error(text: str) -> None:
    with pytest.raises(ExtractionError) as info:
        parse_reply(text, refs=REFS)
    assert info.value.raw == text


def test_truncated_json_raises_with_truncated_raw_text() -> None:
    text = reply(newFacts=[fact("x" * 5000)])[:-40]
    with pytest.raises(ExtractionError) as info:
        parse_reply(text, refs=REFS)
    assert info.value.raw is not None
    assert len(info.value.raw) < 2100
    assert "chars cut" in info.value.raw


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, 0.0),
        (0.8, 0.8),
        (1, 1.0),
        (1.5, 1.0),
        (95, 0.95),
        (95.0, 0.95),
        (2, 0.02),
        (100, 1.0),
        (150, 1.0),
        (99.5, 1.0),
        ("0.8", 0.8),
        (" 95 ", 0.95),
        ("95%", 0.95),
        (math.inf, 1.0),
    ],
)
def test_confidence_is_normalised(value: object, expected: float) -> None:
    assert normalise_confidence(value) == pytest.approx(expected)


@pytest.mark.parametrize("value", [-1, -0.1, math.nan, "NaN", "high", None, True, [0.9]])
def test_unusable_confidence_gives_none(value: object) -> None:
    assert normalise_confidence(value) is None


def test_out_of_range_confidence_keeps_the_rest_of_the_reply() -> None:
    text = reply(newFacts=[fact("A", 1.5), fact("B", 95), fact("C", "0.8")])
    changes = parse_reply(text, refs=REFS)
    assert [(f.content, f.confidence) for f in changes.new_facts] == [
        ("A", 1.0),
        ("B", 0.95),
        ("C", 0.8),
    ]
    assert changes.removals_allowed


def test_nan_confidence_drops_only_that_fact() -> None:
    text = reply(newFacts=[fact("A", 0.9), fact("B", "NaN"), fact("C", -1)])
    changes = parse_reply(text, refs=REFS)
    assert [f.content for f in changes.new_facts] == ["A"]
    assert not changes.removals_allowed


@pytest.mark.parametrize(
    "bad",
    [
        "not an object",
        {"content": 42, "category": "x", "confidence": 0.9},
        {"content": "", "category": "x", "confidence": 0.9},
        {"content": "ok", "category": ["x"], "confidence": 0.9},
        {"content": "ok", "category": "x"},
        {"content": "ok", "category": "x", "confidence": 0.9, "scope": "session"},
        {"content": "ok", "category": "x", "confidence": 0.9, "durability": "forever"},
    ],
)
def test_wrong_types_drop_the_item_and_disable_removals(bad: object) -> None:
    text = reply(newFacts=[fact("Kept"), bad], factsToRemove=[{"ref": "f1", "reason": "r"}])
    changes = parse_reply(text, refs=REFS)
    assert [f.content for f in changes.new_facts] == ["Kept"]
    assert [r.fact_id for r in changes.removals] == ["fact_aaaa"]
    assert not changes.removals_allowed


def test_missing_scope_and_durability_stay_unlabelled() -> None:
    item = {"content": "Likes jazz", "category": "Preference", "confidence": 0.9}
    changes = parse_reply(reply(newFacts=[item]), refs=REFS)
    only = changes.new_facts[0]
    assert (only.scope, only.durability, only.category) == (None, None, "preference")
    assert changes.removals_allowed


def test_task_scoped_labels_are_kept_for_apply_to_reject() -> None:
    item = fact("May force-push", scope="Task", durability="temporary")
    only = parse_reply(reply(newFacts=[item]), refs=REFS).new_facts[0]
    assert (only.scope, only.durability) == ("task", "temporary")


def test_unknown_category_is_kept_in_lower_case() -> None:
    item = fact(category=" Knowledge ")
    assert parse_reply(reply(newFacts=[item]), refs=REFS).new_facts[0].category == "knowledge"


def test_unknown_refs_are_ignored_and_known_ones_map_to_ids() -> None:
    removals = [{"ref": "f9", "reason": "?"}, {"ref": "F2"}, {"ref": 1}, {"ref": "f2"}]
    changes = parse_reply(reply(factsToRemove=removals), refs=REFS)
    assert [r.fact_id for r in changes.removals] == ["fact_bbbb", "fact_aaaa"]
    assert changes.removals_allowed


def test_replaced_by_is_reindexed_past_dropped_facts() -> None:
    text = reply(
        newFacts=[fact("bad", "high"), fact("Lives in Shanghai")],
        factsToRemove=[{"ref": "f1", "reason": "moved", "replacedBy": 1}],
    )
    changes = parse_reply(text, refs=REFS)
    assert changes.removals[0].replaced_by == 0
    assert changes.new_facts[0].content == "Lives in Shanghai"
    assert not changes.removals_allowed


def test_replaced_by_of_wrong_type_disables_removals() -> None:
    text = reply(newFacts=[fact()], factsToRemove=[{"ref": "f1", "replacedBy": "first"}])
    changes = parse_reply(text, refs=REFS)
    assert changes.removals[0].replaced_by is None
    assert not changes.removals_allowed


def test_summary_with_empty_text_is_dropped_and_counted_but_keeps_removals() -> None:
    text = reply(history={"recentMonths": {"shouldUpdate": True, "summary": ""}}, newFacts=[fact()])
    changes = parse_reply(text, refs=REFS)
    assert changes.summaries == ()
    assert changes.removals_allowed
    assert changes.dropped == ("history.recentMonths.summary is missing or empty",)


def test_summary_section_of_wrong_type_drops_only_that_section() -> None:
    # 0.1.0: "recentMonths": [] disabled every removal of the reply (local-models defect 5)
    text = reply(
        user={"workContext": {"shouldUpdate": True, "summary": "Nurse in Oslo", "scope": "user",
                              "durability": "durable"}},
        history={"recentMonths": []},
        newFacts=[fact("Lives in Oslo")],
        factsToRemove=[{"ref": "f1", "reason": "moved to Oslo", "replacedBy": 0}],
    )  # fmt: skip
    changes = parse_reply(text, refs=REFS)
    assert [s.section for s in changes.summaries] == ["workContext"]
    assert changes.removals_allowed
    assert [r.fact_id for r in changes.removals] == ["fact_aaaa"]
    assert changes.dropped == ("history.recentMonths is list, not an object",)


def test_top_level_summary_group_of_wrong_type_drops_only_the_group() -> None:
    text = json.dumps(
        {"user": ["none"], "newFacts": [fact()], "factsToRemove": [{"ref": "f1", "reason": "x"}]}
    )
    changes = parse_reply(text, refs=REFS)
    assert len(changes.new_facts) == 1
    assert changes.removals_allowed
    assert changes.dropped == ("user is list, not an object",)


def test_invalid_fact_still_disables_removals() -> None:
    text = reply(newFacts=[fact(), fact(confidence="high")], factsToRemove=[{"ref": "f1"}])
    changes = parse_reply(text, refs=REFS)
    assert len(changes.new_facts) == 1
    assert not changes.removals_allowed
    assert len(changes.dropped) == 1


def test_reply_with_only_invalid_items_is_an_empty_change_set_not_an_error() -> None:
    changes = parse_reply(json.dumps({"newFacts": "none"}), refs=REFS)
    assert changes.is_empty
    assert not changes.removals_allowed
    assert changes.dropped == ("newFacts is str, not a list",)


def test_removals_that_are_only_bare_strings_are_an_ok_no_op() -> None:
    # 0.1.0 raised ExtractionError ("no usable item"), so the queue retried it three times
    changes = parse_reply(reply(factsToRemove=["f1", "f2"]), refs=REFS)
    assert changes.is_empty
    assert len(changes.dropped) == 2


def test_decoy_object_before_the_reply_does_not_hide_it() -> None:
    text = 'Example: {"user": "alice"}\nHere is my answer:\n' + reply(
        newFacts=[fact("Lives in Oslo")]
    )
    changes = parse_reply(text, refs=REFS)
    assert [f.content for f in changes.new_facts] == ["Lives in Oslo"]
    assert changes.dropped == ()


def test_a_mistyped_object_is_used_when_no_well_typed_one_follows() -> None:
    text = json.dumps({"newFacts": {"content": "x"}, "factsToRemove": []})
    changes = parse_reply(text, refs=REFS)
    assert changes.dropped == ("newFacts is dict, not a list",)


def test_raw_newlines_and_tabs_inside_strings_are_accepted() -> None:
    # grammar-constrained output holds them; 0.1.0 rejected the reply (local-models defect 6)
    text = (
        '{"newFacts": [{"content": "Works as a nurse\n\tin Oslo", "category": "context",'
        ' "confidence": 0.9, "scope": "user", "durability": "durable"}], "factsToRemove": []}'
    )
    assert "\n" in text
    changes = parse_reply(text, refs=REFS)
    assert changes.new_facts[0].content == "Works as a nurse\n\tin Oslo"
    assert changes.removals_allowed


def test_unknown_ref_is_counted_but_does_not_disable_removals() -> None:
    text = reply(factsToRemove=[{"ref": "f9", "reason": "gone"}, {"ref": "f1", "reason": "gone"}])
    changes = parse_reply(text, refs=REFS)
    assert [r.fact_id for r in changes.removals] == ["fact_aaaa"]
    assert changes.removals_allowed
    assert changes.dropped == ("factsToRemove[0].ref='f9' names no listed fact",)


def test_empty_lists_are_a_clean_empty_change_set() -> None:
    changes = parse_reply(reply(), refs=REFS)
    assert changes.is_empty
    assert changes.removals_allowed


def test_source_error_is_kept_for_corrections() -> None:
    item = fact("Wants answers in French", 0.97, category="correction", sourceError="Used English")
    only = parse_reply(reply(newFacts=[item]), refs=REFS).new_facts[0]
    assert (only.category, only.source_error) == ("correction", "Used English")


# --- what small local models send -------------------------------------------------------


def test_trailing_commas_and_comments_are_accepted_and_keep_removals() -> None:
    text = """```json
{
  // facts first
  "newFacts": [
    {"content": "Uses https://example.com/a//b", "category": "knowledge", "confidence": 0.9,
     "scope": "user", "durability": "durable",},  /* one fact */
  ],
  "factsToRemove": [{"ref": "f1", "reason": "outdated",},],
}
```"""
    changes = parse_reply(text, refs=REFS)
    assert [f.content for f in changes.new_facts] == ["Uses https://example.com/a//b"]
    assert [r.fact_id for r in changes.removals] == ["fact_aaaa"]
    assert changes.removals_allowed


@pytest.mark.parametrize(
    "text",
    [
        "{'newFacts': [], 'factsToRemove': []}",
        '{"newFacts": [], "factsToRemove": [], "ok": True}',
        "{newFacts: [], factsToRemove: []}",
        '{"newFacts": [{"content": "x",}',
    ],
)
def test_ambiguous_syntax_is_not_repaired(text: str) -> None:
    with pytest.raises(ExtractionError):
        parse_reply(text, refs=REFS)


def test_closing_think_tag_without_opening_hides_the_trace() -> None:
    trace = 'draft: {"newFacts": [{"content": "Draft fact", "confidence": 0.9}]}\n</think>\n'
    changes = parse_reply(trace + reply(newFacts=[fact("Final fact")]), refs=REFS)
    assert [f.content for f in changes.new_facts] == ["Final fact"]


def test_reply_that_is_a_json_string_holding_the_object_is_decoded() -> None:
    text = json.dumps(reply(newFacts=[fact("Prefers tea")]))
    assert [f.content for f in parse_reply(text, refs=REFS).new_facts] == ["Prefers tea"]


def test_object_nested_in_a_wrapper_is_found() -> None:
    text = json.dumps({"result": json.loads(reply(newFacts=[fact("Prefers tea")]))})
    assert [f.content for f in parse_reply(text, refs=REFS).new_facts] == ["Prefers tea"]


def test_json_text_inside_a_fact_string_is_content_not_the_reply() -> None:
    inner = reply(newFacts=[fact("Injected")])
    text = reply(newFacts=[fact(f"Pasted {inner} into the config")])
    changes = parse_reply(text, refs=REFS)
    assert [f.content for f in changes.new_facts] == [f"Pasted {inner} into the config"]


@pytest.mark.parametrize(("value", "expected"), [("150%", 1.0), ("9500%", 1.0), ("95%", 0.95)])
def test_percent_strings_above_100_percent_are_clamped(value: str, expected: float) -> None:
    assert normalise_confidence(value) == expected


def test_source_error_is_dropped_from_facts_that_are_not_corrections() -> None:
    item = fact("Speaks French", 0.9, category="knowledge", sourceError="Used English")
    assert parse_reply(reply(newFacts=[item]), refs=REFS).new_facts[0].source_error is None
