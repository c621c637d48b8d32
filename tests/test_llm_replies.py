"""What a model sends is evidence, not truth (DESIGN rule 13): ``Memory.update`` with a
scripted model whose replies hold placeholders, echoes of the prompt, the assistant's own
words, copied removals, decoys and slips (findings/local-models.md defects 3-7, and the
reference system's apply and parse test cases)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfold import Memory, MemoryConfig
from memfold.errors import ExtractionError
from memfold.extract.base import Usage
from memfold.llm.base import Completion
from memfold.testing import ScriptedChatModel

USER = "lena"


def fact(
    content: str, category: str = "context", confidence: float = 0.95, **extra: Any
) -> dict[str, Any]:
    return {
        "content": content,
        "category": category,
        "confidence": confidence,
        "sourceError": None,
        "scope": "user",
        "durability": "durable",
        **extra,
    }


def summary(text: str) -> dict[str, Any]:
    return {"shouldUpdate": True, "summary": text, "scope": "user", "durability": "durable"}


def reply(**parts: Any) -> str:
    return json.dumps({"newFacts": [], "factsToRemove": [], **parts})


class Harness:
    def __init__(self, memory: Memory, model: ScriptedChatModel) -> None:
        self.memory = memory
        self.model = model
        self.threads = 0

    def update(self, user: str, assistant: str, answer: str | Completion) -> Any:
        self.model.add(answer)
        self.threads += 1
        turns = [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        return self.memory.update(turns, thread_id=f"t{self.threads}", user_id=USER)

    def facts(self) -> list[str]:
        return [f.content for f in self.memory.get(user_id=USER).facts]

    def summary(self, section: str) -> str:
        return self.memory.get(user_id=USER).summary(section)

    def seed(self, *contents: tuple[str, str]) -> None:
        """Facts learned in an earlier update (not manual ones, which only a correction
        may remove)."""
        said = " ".join(content for content, _ in contents)
        facts = [fact(content, category) for content, category in contents]
        self.update(f"About me: {said}", "Noted.", reply(newFacts=facts))
        assert self.facts() == [content for content, _ in contents]


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    model = ScriptedChatModel()
    # every update here is about the reply, so the gate must not skip a call
    config = MemoryConfig(home=tmp_path, extraction_gate=False)
    with Memory(config, chat_model=model, start_workers=False) as memory:
        yield Harness(memory, model)


def _skipped(result: Any) -> list[str]:
    return [c.reason for c in result.changes if c.kind == "skipped"]


@pytest.mark.parametrize("placeholder", ["...", "N/A", "none", "TBD", "<summary>", "{...}", " … "])
def test_placeholder_summaries_are_dropped_and_counted(harness: Harness, placeholder: str) -> None:
    # 0.1.0 stored "..." summaries and injected "- Work: ..." (local-models defect 4)
    result = harness.update(
        "I'm a nurse in Oslo.",
        "Nice to meet you.",
        reply(user={"workContext": summary(placeholder)}, newFacts=[fact("Works as a nurse")]),
    )
    assert harness.summary("workContext") == ""
    assert harness.facts() == ["Works as a nurse"]
    assert any("placeholder" in reason for reason in _skipped(result))
    assert "Work:" not in harness.memory.context(user_id=USER)


@pytest.mark.parametrize("placeholder", ["...", "none", "TBD", "N/A", "<fact>", "f3", "[...]"])
def test_placeholder_facts_are_dropped(harness: Harness, placeholder: str) -> None:
    result = harness.update("I'm a nurse.", "Noted.", reply(newFacts=[fact(placeholder)]))
    assert harness.facts() == []
    assert not result.committed or result.facts_added == 0
    assert len(_skipped(result)) == 1


def test_summary_labels_with_placeholder_values_are_dropped(harness: Harness) -> None:
    harness.update(
        "I'm a nurse.", "Noted.", reply(user={"workContext": summary("Role: ..., Company: ...")})
    )
    assert harness.summary("workContext") == ""


def test_echo_of_the_prompt_is_not_stored(harness: Harness) -> None:
    result = harness.update(
        "I'm a nurse in Oslo.",
        "Nice.",
        reply(
            user={"workContext": summary("Role, employer, projects, tools.")},
            newFacts=[
                fact("Identity, work, skills, projects, goals, tastes, habits"),
                fact("Works as a nurse in Oslo"),
            ],
        ),
    )
    assert harness.facts() == ["Works as a nurse in Oslo"]
    assert harness.summary("workContext") == ""
    assert sum("echo of the prompt" in r for r in _skipped(result)) == 2


def test_the_assistants_own_sentences_are_not_facts_about_the_user(harness: Harness) -> None:
    # 0.1.0: about a third of the facts a local model stored were the assistant's sentences
    assistant = (
        "Run EXPLAIN ANALYZE first. Partition pruning then limits the join to one partition, "
        "and a composite index on merchant and day avoids the sequential scan."
    )
    result = harness.update(
        "Our nightly reconciliation job on PostgreSQL takes 40 minutes. What should I try?",
        assistant,
        reply(
            newFacts=[
                fact("Partition pruning limits the join to one partition", "knowledge"),
                fact("A composite index on merchant and day avoids the sequential scan"),
                fact("Runs a nightly reconciliation job on PostgreSQL"),
            ]
        ),
    )
    assert harness.facts() == ["Runs a nightly reconciliation job on PostgreSQL"]
    assert sum("the assistant's words" in r for r in _skipped(result)) == 2


def test_a_summary_keeps_the_users_sentences_and_drops_the_assistants(harness: Harness) -> None:
    harness.update(
        "I work at Equinor as a data engineer.",
        "Great. Apache Airflow schedules pipelines well and integrates with dbt for models.",
        reply(
            user={
                "workContext": summary(
                    "Data engineer at Equinor. Apache Airflow schedules pipelines well and "
                    "integrates with dbt."
                )
            }
        ),
    )
    assert harness.summary("workContext") == "Data engineer at Equinor."


def test_an_assistant_suggestion_the_user_confirmed_is_kept(harness: Harness) -> None:
    turns = [
        {"role": "user", "content": "Which linter should our team use?"},
        {"role": "assistant", "content": "I suggest ruff for linting and formatting Python."},
        {"role": "user", "content": "Perfect, exactly what I needed."},
        {"role": "assistant", "content": "Glad it helps."},
    ]
    harness.model.add(
        reply(newFacts=[fact("Uses ruff for linting and formatting Python", "preference")])
    )
    harness.memory.update(turns, thread_id="confirmed", user_id=USER)
    assert harness.facts() == ["Uses ruff for linting and formatting Python"]


def test_a_copied_example_removal_of_an_unrelated_fact_is_refused(harness: Harness) -> None:
    # 0.1.0: 54 of 54 removals a 0.5B model sent were the prompt's example ("f3", "...",
    # replacedBy 0); with three facts in memory f3 is real (local-models defect 3)
    harness.seed(
        ("Works as a nurse", "context"), ("Has two cats", "context"), ("Prefers tea", "preference")
    )
    result = harness.update(
        "I started learning Rust this week.",
        "Have fun with Rust!",
        reply(
            newFacts=[fact("Is learning Rust", "goal")],
            factsToRemove=[{"ref": "f3", "reason": "...", "replacedBy": 0}],
        ),
    )
    assert "Prefers tea" in harness.facts()
    assert "Is learning Rust" in harness.facts()
    assert result.facts_removed == 0
    assert any(r.startswith("removal without a real reason") for r in _skipped(result))


def test_a_removal_with_a_reason_but_an_unrelated_fact_is_refused(harness: Harness) -> None:
    harness.seed(("Works as a nurse", "context"), ("Prefers tea", "preference"))
    result = harness.update(
        "I started learning Rust this week.",
        "Have fun!",
        reply(
            newFacts=[fact("Is learning Rust", "goal")],
            factsToRemove=[{"ref": "f2", "reason": "outdated", "replacedBy": 0}],
        ),
    )
    assert "Prefers tea" in harness.facts()
    assert any("unrelated" in r for r in _skipped(result))


def test_a_contradiction_with_a_related_replacement_is_applied(harness: Harness) -> None:
    # 0.1.0 never removed a real contradiction: "lives in Stockholm" stayed beside "moved to Oslo"
    harness.seed(("Lives in Stockholm", "context"), ("Prefers tea", "preference"))
    result = harness.update(
        "I moved to Oslo last month.",
        "Congratulations!",
        reply(
            newFacts=[fact("Lives in Oslo")],
            factsToRemove=[{"ref": "f1", "reason": "the user moved to Oslo", "replacedBy": 0}],
        ),
    )
    assert harness.facts() == ["Prefers tea", "Lives in Oslo"]
    assert result.facts_removed == 1


def test_a_removal_without_replacement_needs_words_from_the_users_turns(harness: Harness) -> None:
    harness.seed(("Uses Vim as the main editor", "preference"), ("Has two cats", "context"))
    result = harness.update(
        "I don't use Vim anymore.",
        "OK.",
        reply(
            factsToRemove=[
                {"ref": "f1", "reason": "the user stopped using Vim", "replacedBy": None},
                {"ref": "f2", "reason": "the user stopped using it", "replacedBy": None},
            ]
        ),
    )
    assert harness.facts() == ["Has two cats"]
    assert result.facts_removed == 1
    assert any(r == "removal of a fact unrelated to the new turns" for r in _skipped(result))


def test_a_summary_type_slip_no_longer_disables_removals(harness: Harness) -> None:
    # 0.1.0: "recentMonths": [] disabled removals in 10 of 26 replies (local-models defect 5)
    harness.seed(
        ("Lives in Stockholm", "context"),
    )
    harness.update(
        "I moved to Oslo last month.",
        "Congratulations!",
        reply(
            history={"recentMonths": []},
            newFacts=[fact("Lives in Oslo")],
            factsToRemove=[{"ref": "f1", "reason": "moved to Oslo", "replacedBy": 0}],
        ),
    )
    assert harness.facts() == ["Lives in Oslo"]


def test_removals_that_are_bare_strings_are_an_ok_no_op(harness: Harness) -> None:
    # 0.1.0 raised ExtractionError for this reply, so the queue retried it
    harness.seed(
        ("Lives in Stockholm", "context"),
    )
    result = harness.update("Hello again.", "Hi!", reply(factsToRemove=["f1"]))
    assert harness.facts() == ["Lives in Stockholm"]
    assert any("not an object" in r for r in _skipped(result))


def test_a_decoy_object_before_the_reply_does_not_hide_it(harness: Harness) -> None:
    text = 'Example: {"user": "alice"}\nMy answer: ' + reply(newFacts=[fact("Works as a nurse")])
    harness.update("I'm a nurse.", "Nice.", text)
    assert harness.facts() == ["Works as a nurse"]


def test_grammar_output_with_raw_newlines_inside_strings_is_read(harness: Harness) -> None:
    # local-models defect 6
    text = (
        '{"newFacts": ['
        + json.dumps(fact("Works night shifts")).replace("night shifts", "night\nshifts")
        + '], "factsToRemove": []}'
    )
    harness.update("I work night shifts.", "Take care.", text)
    assert harness.facts() == ["Works night\nshifts"]


def test_source_error_is_kept_only_on_corrections(harness: Harness) -> None:
    harness.update(
        "No, that's wrong: I want answers in French.",
        "Sorry!",
        reply(
            newFacts=[
                fact("Wants answers in French", "correction", sourceError="Answered in English"),
                fact("Speaks French", "knowledge", sourceError="Answered in English"),
            ]
        ),
    )
    errors = {f.content: f.source_error for f in harness.memory.get(user_id=USER).facts}
    assert errors == {"Wants answers in French": "Answered in English", "Speaks French": None}


def test_upload_events_are_scrubbed_from_summaries_too(harness: Harness) -> None:
    # DESIGN rule 7: summaries, like facts; 0.1.0 stored the upload sentence in the summary
    harness.update(
        "I'm an analyst at Acme.",
        "Hi!",
        reply(
            user={"topOfMind": summary("Analyst at Acme. Uploaded a PDF of the Q3 report.")},
            newFacts=[fact("Shared the report by uploading a file"), fact("Works at Acme")],
        ),
    )
    assert harness.summary("topOfMind") == "Analyst at Acme."
    assert harness.facts() == ["Works at Acme"]


def test_usage_is_counted_for_a_reply_that_fails_to_parse(harness: Harness) -> None:
    # local-models defect 7: 0.1.0 counted 4,400 tokens against 19,164 sent
    with pytest.raises(ExtractionError):
        harness.update("I'm a nurse.", "Nice.", Completion("I cannot help.", Usage(700, 9)))
    status = harness.memory.status()
    assert (status.prompt_tokens, status.completion_tokens) == (700, 9)


def test_a_cut_reply_keeps_its_complete_items_and_says_how_to_fix_the_cut(
    harness: Harness,
) -> None:
    harness.seed(
        ("Lives in Stockholm", "context"),
    )
    cut = reply(
        newFacts=[fact("Works as a nurse"), fact("Lives in Oslo")],
        factsToRemove=[{"ref": "f1", "reason": "moved", "replacedBy": 1}],
    )[:-60]
    harness.update("I'm a nurse and I moved to Oslo.", "Nice.", Completion(cut, truncated=True))
    assert harness.facts() == ["Lives in Stockholm", "Works as a nurse", "Lives in Oslo"]
    with pytest.raises(ExtractionError, match=r"raise llm\.max_output_tokens"):
        harness.update("More.", "OK.", Completion('{"newFacts": [{"content": "x', truncated=True))


def test_current_uploads_blocks_are_stripped_at_capture(harness: Harness) -> None:
    harness.update(
        "<current_uploads>\n- notes.pdf (12 KB)\n</current_uploads>\nI'm a nurse.", "Hi.", reply()
    )
    prompt = harness.model.calls[-1][1].content
    assert "notes.pdf" not in prompt
    assert "I&#x27;m a nurse." in prompt or "I'm a nurse." in prompt


def test_upload_tags_are_configurable(tmp_path: Path) -> None:
    model = ScriptedChatModel([reply()])
    config = MemoryConfig(home=tmp_path, upload_tags=("attachments",))
    with Memory(config, chat_model=model, start_workers=False) as memory:
        turns = [
            {"role": "user", "content": "<attachments>a.pdf</attachments> I'm a nurse."},
            {"role": "assistant", "content": "Hi."},
        ]
        memory.update(turns, thread_id="t", user_id=USER)
    assert "a.pdf" not in model.calls[0][1].content


def test_a_correction_taken_back_in_the_same_turn_is_not_sent_as_one(harness: Harness) -> None:
    harness.update("No wait, that's wrong. Actually yes, exactly right.", "Great.", reply())
    prompt = harness.model.calls[-1][1].content
    assert "corrected the assistant" not in prompt
    assert "confirmed that an answer" in prompt
