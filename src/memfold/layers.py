"""Layering: an agent's memory on top of the user's shared memory, for one block.

Pure: the two documents in, one document out, nothing stored. ``include_shared`` (config)
decides whether ``Memory.context`` layers; this module decides how:

- facts: the agent's own, then the shared ones the agent does not already hold (same
  content in ``dedup_key`` form, or the same id); the renderer ranks them all in one
  budget, guaranteed categories first;
- summaries: per section, the agent's text when it has one, else the shared text.
"""

from __future__ import annotations

from types import MappingProxyType

from memfold._facts import dedup_key
from memfold.model import SUMMARY_SECTIONS, MemoryDocument, Summary

__all__ = ["layer"]


def layer(shared: MemoryDocument, agent: MemoryDocument) -> MemoryDocument:
    """``agent`` with ``shared`` beneath it (``agent``'s revision and generation)."""
    if shared.is_empty:
        return agent
    held_ids = {fact.id for fact in agent.facts}
    held = {dedup_key(fact.content) for fact in agent.facts}
    extra = [
        fact
        for fact in shared.facts
        if fact.id not in held_ids and dedup_key(fact.content) not in held
    ]
    summaries: dict[str, Summary] = dict(agent.summaries)
    for section in SUMMARY_SECTIONS:
        if not agent.summary(section).strip() and shared.summary(section).strip():
            summaries[section] = shared.summaries[section]
    return agent.with_changes(facts=(*agent.facts, *extra), summaries=MappingProxyType(summaries))
