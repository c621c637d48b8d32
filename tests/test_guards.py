"""The checks of ``memfold._guards`` on their own (DESIGN rule 13)."""

from __future__ import annotations

import pytest

from memfold._guards import (
    Evidence,
    content_problem,
    content_words,
    echo_of_instructions,
    from_assistant,
    is_placeholder,
    removal_problem,
    sentences,
)
from memfold.model import Message

PROMPT = (
    "Keep only what the user says about themselves: identity, work, skills, projects. "
    "user.workContext (role, employer, projects, tools)."
)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "...", "…", "N/A", "none", "None.", "TBD", "todo", "unknown", "<summary>",
     "<...>", "{...}", "[...]", "[name]", "-", "?", "Work: ...", "Role: ..., Company: ...",
     "f3", "F12", "暂无", "(empty)", "same as before"],
)  # fmt: skip
def test_placeholders_are_recognised(text: str) -> None:
    assert is_placeholder(text)


@pytest.mark.parametrize(
    "text",
    ["Works as a nurse", "Uses Python 3.12", "Lives in Oslo...", "Prefers ... short answers",
     "Rotating [REDACTED:github_token]", "Is an F1 fan", "Uses the C++ <vector> header",
     "住在上海", "N/A-compliant forms are his job", "None of the above applies to Rust"],
)  # fmt: skip
def test_real_content_is_not_a_placeholder(text: str) -> None:
    assert not is_placeholder(text)


def test_content_words_drop_stopwords_and_framing_and_stem_lightly() -> None:
    assert content_words("The user prefers concise answers") == {"concis", "answer"}
    assert content_words("Lives in Stockholm") == content_words("I live in Stockholm")
    assert content_words("用户喜欢猫") == {"喜欢", "欢猫"}


def test_echo_of_a_field_description_is_caught_and_real_content_is_not() -> None:
    evidence = Evidence(instructions=(PROMPT,))
    assert echo_of_instructions("Role, employer, projects, tools", evidence)
    assert echo_of_instructions("identity, work, skills", evidence)
    assert not echo_of_instructions("Works as a nurse at Oslo University Hospital", evidence)
    assert not echo_of_instructions("anything", Evidence())


def _turns(*pairs: tuple[str, str]) -> tuple[Message, ...]:
    return tuple(Message(role, text) for role, text in pairs)  # type: ignore[arg-type]


def test_the_assistants_sentence_is_caught_but_not_a_paraphrase_of_the_user() -> None:
    evidence = Evidence(
        turns=_turns(
            ("user", "Our reconciliation job on PostgreSQL takes forty minutes."),
            ("assistant", "Partition pruning limits the join to one partition of the ledger."),
        )
    )
    assert from_assistant("Partition pruning limits the join to one partition", evidence)
    assert not from_assistant("Runs a reconciliation job on PostgreSQL", evidence)
    # too short to tell a copy from a paraphrase
    assert not from_assistant("Partition pruning", evidence)


def test_the_assistants_words_in_chinese_are_caught_too() -> None:
    evidence = Evidence(
        turns=_turns(("user", "我在上海工作"), ("assistant", "分区裁剪可以把连接限制在一个分区内"))
    )
    assert from_assistant("分区裁剪可以把连接限制在一个分区", evidence)
    assert not from_assistant("在上海工作", evidence)


def test_an_answer_the_user_confirmed_counts_as_the_users() -> None:
    turns = _turns(
        ("user", "Which linter should we use?"),
        ("assistant", "I suggest ruff for linting and formatting Python code."),
        ("user", "Perfect, exactly what I needed."),
    )
    assert not from_assistant("Uses ruff for linting and formatting Python", Evidence(turns=turns))
    unconfirmed = (*turns[:2], Message("user", "Hmm, let me think."))
    assert from_assistant(
        "Uses ruff for linting and formatting Python", Evidence(turns=unconfirmed)
    )


def test_without_turns_the_turn_checks_are_skipped() -> None:
    evidence = Evidence()
    assert not from_assistant("Partition pruning limits the join to one partition", evidence)
    assert (
        removal_problem(
            reason="", fact_content="x", fact_category="c", replacement=None, evidence=evidence
        )
        is None
    )


def test_content_problem_names_the_first_problem() -> None:
    evidence = Evidence(instructions=(PROMPT,), turns=_turns(("user", "hi")))
    assert content_problem("...", evidence) == "placeholder, not content"
    assert content_problem("Role, employer, projects", evidence) == (
        "echo of the prompt's instructions"
    )
    assert content_problem("Works as a nurse", evidence) is None


@pytest.mark.parametrize(
    ("reason", "replacement", "problem"),
    [
        ("", ("Lives in Oslo", "context"), "removal without a reason"),
        ("...", ("Lives in Oslo", "context"), "removal without a real reason"),
        ("moved", ("Lives in Oslo", "context"), None),  # same category
        ("moved", ("Prefers Stockholm's old town", "preference"), None),  # shared word
        ("moved", ("Is learning Rust", "goal"), "removal of a fact unrelated to its replacement"),
        ("no longer true", None, "removal of a fact unrelated to the new turns"),
    ],
)
def test_removal_needs_a_reason_and_a_related_fact(
    reason: str, replacement: tuple[str, str] | None, problem: str | None
) -> None:
    evidence = Evidence(turns=_turns(("user", "I started learning Rust this week.")))
    found = removal_problem(
        reason=reason,
        fact_content="Lives in Stockholm",
        fact_category="context",
        replacement=replacement,
        evidence=evidence,
    )
    assert found == problem if problem is None else found is not None and found.startswith(problem)


def test_removal_related_to_the_users_words_needs_no_replacement() -> None:
    evidence = Evidence(turns=_turns(("user", "I don't use Vim anymore.")))
    assert (
        removal_problem(
            reason="stopped using it",
            fact_content="Uses Vim as the main editor",
            fact_category="preference",
            replacement=None,
            evidence=evidence,
        )
        is None
    )


def test_sentences_split_on_latin_and_cjk_ends() -> None:
    assert sentences("Works at Acme. Uploaded a file!\n住在上海。喜欢猫") == [
        "Works at Acme.",
        "Uploaded a file!",
        "住在上海。",
        "喜欢猫",
    ]
