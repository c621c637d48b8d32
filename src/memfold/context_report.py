"""What the injection block holds and leaves out, and why: ``Memory.explain_context``.

``memfold.inject.plan`` records a decision for every fact and summary section while it
builds the block; :func:`report` turns that plan into a :class:`ContextReport`, the
JSON-ready answer to "what did it inject, and what did it leave out?".

Reasons (``ContextItem.reason``), in :data:`REASONS`: included as ``guaranteed`` (from
the guaranteed categories' own budget), ``fits`` or ``truncated`` (a summary cut to the
room left); dropped for ``budget`` (no room left in ``max_tokens``),
``guaranteed_pool_full`` (a guaranteed fact that fit neither its budget nor what was
left), ``held_out`` (a summary that still mentions removed content) or ``empty``
(nothing to show once escaped).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from memfold.model import Fact, Scope

__all__ = [
    "REASONS",
    "ContextItem",
    "ContextReport",
    "FactDecision",
    "RenderPlan",
    "SummaryDecision",
    "report",
]

#: Every reason code, and what it means for a person reading the report.
REASONS: dict[str, str] = {
    "guaranteed": "guaranteed category, from its own budget",
    "fits": "fits the budget",
    "truncated": "cut short to fit the budget",
    "budget": "no room left within max_tokens",
    "guaranteed_pool_full": "guaranteed budget full and no room left in the rest",
    "held_out": "held out after a removal until it is rewritten",
    "empty": "nothing to show",
}


@dataclass(frozen=True, slots=True)
class FactDecision:
    """Whether one fact is in the block, and why (a code of :data:`REASONS`)."""

    fact: Fact
    included: bool
    reason: str
    tokens: int
    guaranteed: bool


@dataclass(frozen=True, slots=True)
class SummaryDecision:
    """Whether one summary section is in the block, and why; ``detail`` says what a
    held-out section still mentions."""

    section: str
    text: str
    included: bool
    reason: str
    tokens: int
    detail: str = ""


@dataclass(frozen=True, slots=True)
class RenderPlan:
    """A rendered block and every decision behind it.

    ``tokens`` is the block's count as planned (exact for a ``TokenCounter``); ``budget``
    the ``max_tokens`` it had to fit; ``guaranteed_used`` what the guaranteed facts took
    of ``guaranteed_budget``.
    """

    text: str
    tokens: int
    budget: int
    facts: tuple[FactDecision, ...]
    summaries: tuple[SummaryDecision, ...]
    guaranteed_budget: int
    guaranteed_used: int


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One fact or summary section and what became of it. ``tokens`` is what its line
    costs (or would have cost) in the block; ``id`` is the fact id or the section name."""

    kind: Literal["fact", "summary"]
    id: str
    content: str
    included: bool
    reason: str
    tokens: int
    category: str | None = None
    confidence: float | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "id": self.id,
            "content": self.content,
            "included": self.included,
            "reason": self.reason,
            "tokens": self.tokens,
        }
        if self.kind == "fact":
            out["category"] = self.category
            out["confidence"] = self.confidence
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True, slots=True)
class ContextReport:
    """The block ``context()`` returns (``text``, its exact ``tokens``, the ``budget``)
    and every fact and summary section, ``included`` (in block order) or ``dropped``."""

    user_id: str | None
    agent: str | None
    text: str
    tokens: int
    budget: int
    guaranteed_budget: int
    guaranteed_used: int
    included: tuple[ContextItem, ...]
    dropped: tuple[ContextItem, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "userId": self.user_id,
            "agent": self.agent,
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "guaranteedBudget": self.guaranteed_budget,
            "guaranteedUsed": self.guaranteed_used,
            "included": [item.to_dict() for item in self.included],
            "dropped": [item.to_dict() for item in self.dropped],
        }


def _fact_item(decision: FactDecision) -> ContextItem:
    fact = decision.fact
    return ContextItem(
        "fact", fact.id, fact.content, decision.included, decision.reason, decision.tokens,
        fact.category, fact.confidence,
    )  # fmt: skip


def report(plan: RenderPlan, scope: Scope) -> ContextReport:
    """The report of ``plan``, the block of ``scope``."""
    summaries = [
        ContextItem("summary", d.section, d.text, d.included, d.reason, d.tokens, detail=d.detail)
        for d in plan.summaries
    ]
    facts = [_fact_item(d) for d in plan.facts]
    taken = [f for f in plan.facts if f.included]
    in_block = [f for f in taken if f.guaranteed] + [f for f in taken if not f.guaranteed]
    return ContextReport(
        user_id=scope.user_id,
        agent=scope.agent,
        text=plan.text,
        tokens=plan.tokens,
        budget=plan.budget,
        guaranteed_budget=plan.guaranteed_budget,
        guaranteed_used=plan.guaranteed_used,
        included=(
            *(s for s in summaries if s.included),
            *(_fact_item(d) for d in in_block),
        ),
        dropped=(*(s for s in summaries if not s.included), *(f for f in facts if not f.included)),
    )
