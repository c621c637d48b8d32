"""Scoring is pure: verdicts per stored fact, one-to-one pairing, slices and wording."""

from __future__ import annotations

import json

from memfold.eval import StoredFact, parse_corpus, score
from memfold.eval.corpus import Labelled
from memfold.eval.score import first_person, judge, matches


def _conversation(**fields: object):
    data = {"id": "c1", "messages": _MESSAGES, "expect": []}
    data.update(fields)
    (conversation,) = parse_corpus([json.dumps(data)])
    return conversation


_MESSAGES = [{"role": "user", "content": "…"}, {"role": "assistant", "content": "…"}]


def _item(*terms: str) -> Labelled:
    return Labelled(tuple(tuple(t.split("|")) for t in terms), "context")


def test_a_term_matches_at_word_starts_with_inflections_but_not_inside_other_words() -> None:
    assert matches(_item("peanut"), "Is allergic to peanuts")
    assert matches(_item("introvert"), "Is introverted")
    assert not matches(_item("Go"), "Works at Google")
    assert not matches(_item("Java"), "Uses JavaScript")
    assert not matches(_item("29"), "Lives at number 290")
    assert matches(_item("上海"), "住在上海")
    assert matches(_item("ｃａｆé"), "Likes CAFÉ")  # NFKC and case folding
    assert matches(_item("Leeds|利兹", "lives"), "Lives in Leeds")
    assert not matches(_item("Leeds", "works"), "Lives in Leeds")


def test_every_stored_fact_gets_one_verdict() -> None:
    conversation = _conversation(
        expect=[{"terms": ["vegan"], "category": "context"}],
        allowed=[{"terms": ["wife"]}],
        traps=[{"terms": ["Kafka"]}],
    )
    facts = [
        StoredFact("Is vegan", "context"),
        StoredFact("Vegan since 2019", "context"),  # says it again: a repeat, not wrong
        StoredFact("Has a wife", "context"),
        StoredFact("Uses Kafka", "knowledge"),
        StoredFact("Likes jazz", "preference"),
    ]
    result = judge(conversation, facts)
    assert result.verdicts == ("correct", "allowed", "allowed", "invented", "unexpected")
    assert result.misses == ()


def test_one_fact_merging_two_statements_counts_once() -> None:
    conversation = _conversation(
        expect=[
            {"terms": ["nurse"], "category": "context"},
            {"terms": ["Leeds"], "category": "context"},
        ]
    )
    result = judge(conversation, [StoredFact("Is a nurse in Leeds", "context")])
    assert result.matched.count(None) == 1
    assert len(result.misses) == 1


def test_pairing_finds_the_assignment_that_covers_the_most_facts() -> None:
    # greedy would give "Speaks Spanish and Italian" to the first item and miss the second
    conversation = _conversation(
        expect=[
            {"terms": ["Spanish"], "category": "context"},
            {"terms": ["Spanish", "Italian"], "category": "context"},
        ]
    )
    facts = [
        StoredFact("Speaks Spanish and Italian", "context"),
        StoredFact("Speaks Spanish", "context"),
    ]
    assert judge(conversation, facts).matched == (1, 0)


def test_report_slices_by_language_category_and_tag_and_counts_traps() -> None:
    en = _conversation(
        id="en",
        tags=["short"],
        expect=[
            {"terms": ["vegan"], "category": "context"},
            {"terms": ["Rust"], "category": "goal"},
        ],
        traps=[{"terms": ["Kafka"]}],
    )
    (zh,) = parse_corpus(
        [json.dumps({"id": "zh", "lang": "zh", "messages": _MESSAGES,
                     "expect": [{"terms": ["上海"], "category": "context"}]})]
    )  # fmt: skip
    report = score(
        [en, zh],
        {"en": [StoredFact("Is vegan", "preference"), StoredFact("Uses Kafka", "knowledge")]},
        errors={"zh": "ChatModelError: unreachable"},
    )
    assert (report.overall.expected, report.overall.found, report.overall.stored) == (3, 1, 2)
    assert report.overall.recall == 1 / 3
    assert report.overall.precision == 0.5
    assert report.overall.invented == 1
    assert report.by_language["zh"].recall == 0.0
    assert list(report.by_language) == ["en", "zh"]
    assert report.by_category["goal"].found == 0
    assert report.by_category["knowledge"].invented == 1
    assert report.by_category["goal"].conversations == 1
    assert report.by_tag["trap"].conversations == 1
    assert report.by_tag["short"].expected == 2
    assert [(cid, f.content) for cid, _, f in report.category_mismatches] == [("en", "Is vegan")]
    assert report.failed == (("zh", "ChatModelError: unreachable"),)
    assert [cid for cid, _ in report.facts_with("invented")] == ["en"]


def test_nothing_to_judge_has_no_ratio() -> None:
    report = score([_conversation()], {})
    assert (report.overall.recall, report.overall.precision) == (None, None)


def test_facts_speaking_as_the_user_are_found() -> None:
    assert first_person("Likes my team")
    assert first_person("Wants the assistant to give me code")
    assert first_person("希望以后都用中文回答我")
    assert not first_person("团队用的是 Go，我们的项目")  # 我们 (the team) is not the user
    assert not first_person("Likes their team")
    assert not first_person("Is in Ireland")
