"""The printed report, and the duplicated-token share of an injected block."""

from __future__ import annotations

import json

from memfold import Memory
from memfold.eval import evaluate, format_evaluation, parse_corpus
from memfold.eval.duplication import duplication


def _words(text: str) -> int:
    return len(text.split())


def test_report_prints_the_table_slices_and_the_lists() -> None:
    corpus = parse_corpus(
        [
            json.dumps(
                {
                    "id": "c1",
                    "tags": ["short"],
                    "messages": [
                        {"role": "user", "content": "I'm vegan. I prefer short answers."},
                        {"role": "assistant", "content": "Noted."},
                    ],
                    "expect": [
                        {"terms": ["vegan"], "category": "context"},
                        {"terms": ["allergic"], "category": "context"},
                    ],
                }
            )
        ]
    )
    text = format_evaluation(evaluate(corpus), corpus="c.jsonl", limit=1)
    lines = text.splitlines()
    assert lines[0] == "extraction quality of the rules extractor on c.jsonl"
    header = next(line for line in lines if "recall" in line)
    for column in ("expected", "found", "recall", "stored", "precision", "invented", "unexpected"):
        assert column in header
    assert any(line.startswith("all ") and " 0.50 " in line for line in lines)
    for section in ("language", "category (expected / stored)", "tag"):
        assert section in lines
    assert "missed (1):" in lines
    assert any("allergic" in line for line in lines)
    assert "unexpected (not labelled) (1):" in lines


def test_a_block_repeating_its_facts_in_summaries_has_a_duplicated_share() -> None:
    block = (
        "<user_memory>\nUser context:\n"
        "- Work: Is a data engineer; Working on a migration to Snowflake\n"
        "Facts:\n"
        "- [context | 0.90] Is a data engineer at Zalando\n"
        "- [goal | 0.90] Working on a migration to Snowflake\n"
        "- [correction | 0.95] Correction: the user lives in Berlin (avoid: You live in Munich)\n"
        "</user_memory>"
    )
    found = duplication(block, _words)
    assert sorted(found.repeated) == ["Is a data engineer", "Working on a migration to Snowflake"]
    assert found.duplicated_tokens == 4 + 6
    assert found.share == found.duplicated_tokens / _words(block)


def test_a_block_of_distinct_facts_has_no_duplication() -> None:
    block = "Facts:\n- [context | 0.90] Name is Alice\n- [context | 0.90] Lives in Berlin\n"
    assert duplication(block, _words).share == 0.0
    assert duplication("", _words).share == 0.0


def test_with_the_rule_extractor_the_injected_block_says_nothing_twice() -> None:
    # 0.1.0 wrote summaries that repeated the facts: about a fifth of the demo block
    turns = [
        ("I'm Alice, a data engineer in Berlin. I work at Zalando. I prefer concise answers."),
        ("I'm working on a migration of our warehouse to Snowflake."),
        ("My goal is to finish the migration by the end of Q3."),
        ("No, I live in Berlin, not Munich."),
        ("我叫王伟。我是一名产品经理，目前住在上海。我喜欢简洁的回答。"),
    ]
    with Memory(storage="memory", start_workers=False) as memory:
        for index, text in enumerate(turns):
            memory.update(
                [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}],
                thread_id=f"t{index}",
                user_id="alice",
            )
        block = memory.context(user_id="alice")
        assert memory.get(user_id="alice").summaries["workContext"].summary == ""
    assert "Facts:" in block
    assert duplication(block, _words).repeated == ()
