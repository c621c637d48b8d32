"""One extraction for several threads of one (user, agent): the queue's batch of due jobs.

A user busy in several conversations at once would otherwise cost one extraction per
thread per debounce window, each sending the same memory view and instructions. Here the
new turns of every due thread go into one request (each thread its own ``<thread>`` in
the conversation section), as many as fit ``max_extraction_input_tokens``; one change set
is applied and one commit moves every thread's watermark. Threads the extraction gate
finds nothing in are only marked seen (one commit for all of them); a thread too long for
a shared request, or alone in its group, takes the single-thread path (chunking included).
Only extractors that read ``ExtractionRequest.threads`` (``takes_threads``, the LLM
extractor) get shared requests; others run thread by thread in the same job.

Provenance stays per thread: a fact added from a batch names as its source the thread
whose user turns share the most terms with it (the last thread when none does), and its
history event carries that thread and its turns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from memfold import watermark
from memfold._facts import iso
from memfold._fence import cleared_time, recorded_before_clear
from memfold.apply import Change, apply
from memfold.extract.base import ExtractionRequest, SizedExtractor, Usage
from memfold.model import MemoryDocument, Message, Scope, Signals
from memfold.queue.base import RecordMark
from memfold.redact import redact_messages
from memfold.search._terms import terms

if TYPE_CHECKING:
    from memfold.history import ChangeEvent
    from memfold.updater import Updater, UpdateResult

__all__ = ["BatchResult", "ThreadWork", "run_batch"]

#: Tokens a thread's ``<thread>`` wrapper adds to a shared request (planning estimate;
#: the whole request is measured before it is sent).
_THREAD_OVERHEAD_TOKENS = 8


@dataclass(frozen=True, slots=True)
class ThreadWork:
    """One thread's part of a batch: what ``Updater.run`` takes for it."""

    thread_id: str
    messages: tuple[Message, ...]
    signals: Signals = field(default_factory=Signals)
    fenced: Callable[[], bool] | None = None
    erased: Callable[[], bool] | None = None
    recorded_at: float | None = None
    marks: tuple[RecordMark, ...] = ()


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Each thread's result, in the order given, and what the whole batch cost."""

    results: tuple[UpdateResult, ...]
    usage: Usage = field(default_factory=Usage)

    @property
    def requests(self) -> int:
        return sum(result.requests for result in self.results)


@dataclass(slots=True)
class _Thread:
    work: ThreadWork
    messages: tuple[Message, ...]  # redacted
    start: int  # the first new message

    @property
    def new(self) -> tuple[Message, ...]:
        """The new turns, with the assistant answer before them (see ``_chunk``)."""
        start = self.start
        if start > 0 and self.messages[start - 1].role == "assistant":
            start -= 1
        return self.messages[start:]


def run_batch(updater: Updater, scope: Scope, works: Sequence[ThreadWork]) -> BatchResult:
    """Update ``scope`` from several threads' new turns with as few extractions as fit.

    Raises:
        ExtractionError, ChatModelError: an extraction failed (the queue retries every
            thread of the batch; what was committed before stays committed).
        ConflictError, StorageError: as for ``Updater.run``.
    """
    from memfold.updater import UpdateResult

    if len(works) == 1 or not getattr(updater.extractor, "takes_threads", False):
        # an extractor that does not read ExtractionRequest.threads would see one
        # thread's answer as the context of the next thread's first turn
        return _batch_result([_single(updater, scope, work) for work in works])
    results: dict[int, UpdateResult] = {}
    document = updater.store.load(scope)
    pending: list[tuple[int, _Thread]] = []
    for index, work in enumerate(works):
        messages = redact_messages(work.messages, updater.redactor)
        forgotten = recorded_before_clear(
            messages, work.recorded_at, work.marks, cleared_time(document)
        )
        if forgotten:  # turns said before a clear: seen, never learned (rare: own path)
            results[index] = _single(updater, scope, work)
            continue
        start = len(messages) - len(
            watermark.new_messages(messages, document.watermarks.get(work.thread_id))
        )
        if not any(m.role == "user" for m in messages[start:]):
            results[index] = UpdateResult(
                scope, work.thread_id, document.revision, False, skipped="nothing new"
            )
            continue
        pending.append((index, _Thread(work, messages, start)))
    gate = updater.gate
    extract: list[tuple[int, _Thread]] = []
    gated: list[tuple[int, _Thread, str]] = []
    for index, thread in pending:
        decision = None if gate is None else gate.decide(thread.new)
        if decision is not None and not decision.call:
            gated.append((index, thread, decision.reason))
        else:
            extract.append((index, thread))
    if gated:
        results.update(_mark_gated(updater, scope, gated))
    for group in _groups(updater, document, extract):
        if len(group) == 1:
            index, thread = group[0]
            results[index] = _single(updater, scope, thread.work)
        else:
            results.update(_run_group(updater, scope, group))
    return _batch_result([results[i] for i in range(len(works))])


def _batch_result(results: Sequence[UpdateResult]) -> BatchResult:
    total = Usage()
    for result in results:
        total = total + result.usage
    return BatchResult(tuple(results), total)


def _single(updater: Updater, scope: Scope, work: ThreadWork) -> UpdateResult:
    return updater.run(
        scope, work.thread_id, work.messages, work.signals, fenced=work.fenced,
        recorded_at=work.recorded_at, marks=work.marks, erased=work.erased,
    )  # fmt: skip


def _mark_gated(
    updater: Updater, scope: Scope, gated: Sequence[tuple[int, _Thread, str]]
) -> dict[int, UpdateResult]:
    """One commit moving the watermarks of every thread the gate found nothing in."""
    from memfold.updater import GATED, UpdateResult

    erased = gated[0][1].work.erased
    if erased is not None and erased():
        skipped = "user erased during update"
        return {
            index: UpdateResult(scope, t.work.thread_id, 0, False, skipped=skipped)
            for index, t, _ in gated
        }

    def attempt() -> int:
        current = updater.store.load(scope)
        marked = current
        for _, thread, _ in gated:
            marked = watermark.advance(
                marked, thread.work.thread_id, thread.messages, iso(updater.now())
            )
        if marked is current:
            return current.revision
        return updater.store.commit(scope, marked, expected_revision=current.revision).revision

    revision = updater.retry(scope, attempt)
    return {
        index: UpdateResult(
            scope, thread.work.thread_id, revision, False, skipped=f"{GATED}: {reason}"
        )
        for index, thread, reason in gated
    }


def _groups(
    updater: Updater, document: MemoryDocument, threads: Sequence[tuple[int, _Thread]]
) -> list[list[tuple[int, _Thread]]]:
    """``threads`` in order, grouped so that each group's request fits the size limit;
    a thread that does not fit with any other stays alone (its own path chunks it)."""
    extractor = updater.extractor
    limit = updater.max_input_tokens
    if limit is None or not isinstance(extractor, SizedExtractor):
        return [list(threads)] if threads else []
    groups: list[list[tuple[int, _Thread]]] = []
    current: list[tuple[int, _Thread]] = []
    used = 0
    for item in threads:
        _, thread = item
        size = sum(extractor.message_tokens(m) for m in thread.new) + _THREAD_OVERHEAD_TOKENS
        if current and used + size <= limit:
            current.append(item)
            used += size
            continue
        if current:
            groups.append(current)
        current = [item]
        alone = extractor.request_tokens(_request(document, [thread]))
        used = size if alone is None else alone
    if current:
        groups.append(current)
    fitted: list[list[tuple[int, _Thread]]] = []
    for group in groups:  # the plan summed estimates: measure each group whole
        while len(group) > 1:
            measured = extractor.request_tokens(_request(document, [t for _, t in group]))
            if measured is None or measured <= limit:
                break
            fitted.append([group.pop()])
        fitted.append(group)
    return sorted(fitted, key=lambda g: g[0][0])


def _request(document: MemoryDocument, threads: Sequence[_Thread]) -> ExtractionRequest:
    messages: list[Message] = []
    signals = Signals()
    for thread in threads:
        messages.extend(thread.new)
        signals = signals.merge(thread.work.signals)
    return ExtractionRequest(
        document,
        tuple(messages),
        signals,
        threads[-1].work.thread_id,
        threads=tuple((t.work.thread_id, len(t.new)) for t in threads) if len(threads) > 1 else (),
    )


def _run_group(
    updater: Updater, scope: Scope, group: Sequence[tuple[int, _Thread]]
) -> dict[int, UpdateResult]:
    """One extraction for the group's threads and one commit of its change set with
    every thread's watermark moved."""
    from memfold.updater import UpdateResult, log_dropped

    threads = [thread for _, thread in group]
    document = updater.store.load(scope)
    request = _request(document, threads)
    extraction = updater.extractor.propose(request)
    generation = document.generation
    fresh = [document]
    erased = threads[0].work.erased

    def results(
        revision: int, committed: bool, skipped: str | None, changes: dict[str, list[Change]]
    ) -> dict[int, UpdateResult]:
        out: dict[int, UpdateResult] = {}
        for n, (index, thread) in enumerate(group):
            out[index] = UpdateResult(
                scope, thread.work.thread_id, revision, committed,
                tuple(changes.get(thread.work.thread_id, ())),
                extraction.usage if n == 0 else Usage(),
                len(thread.new), skipped, requests=1 if n == 0 else 0,
            )  # fmt: skip
        return out

    def attempt() -> dict[int, UpdateResult]:
        current = fresh.pop() if fresh else updater.store.load(scope)
        if current.revision < document.revision or (erased is not None and erased()):
            return results(current.revision, False, "user erased during update", {})
        fenced = any(t.work.fenced is not None and t.work.fenced() for t in threads)
        if current.generation != generation or fenced:
            marked = current
            for thread in threads:
                marked = watermark.advance(
                    marked, thread.work.thread_id, thread.messages, iso(updater.now())
                )
            revision = updater.store.commit(
                scope, marked, expected_revision=current.revision
            ).revision
            return results(revision, False, "cleared during update", {})
        now = updater.now()
        applied = apply(
            current,
            extraction.change_set,
            updater.apply_context(
                now,
                threads[-1].work.thread_id,
                request.signals,
                instructions=extraction.instructions,
                turns=request.messages,
            ),
        )
        log_dropped(scope, applied.changes)
        by_thread = _attribute(applied.changes, threads)
        result_doc = _with_sources(applied.document, by_thread)
        for thread in threads:
            result_doc = watermark.advance(
                result_doc, thread.work.thread_id, thread.messages, iso(now)
            )
        events: list[ChangeEvent] = []
        for thread in threads:
            mine = by_thread.get(thread.work.thread_id, [])
            events.extend(updater.events(mine, thread.work.thread_id, thread.new, iso(now)))
        stored = updater.commit_events(scope, result_doc, current.revision, events)
        return results(stored.revision, True, None, by_thread)

    return updater.retry(scope, attempt)


def _attribute(changes: Sequence[Change], threads: Sequence[_Thread]) -> dict[str, list[Change]]:
    """Each change under the thread whose user turns share most terms with its text (the
    last thread on a tie or no overlap)."""
    said = [
        (t.work.thread_id, set(terms(" ".join(m.content for m in t.new if m.role == "user"))))
        for t in threads
    ]
    out: dict[str, list[Change]] = {}
    for change in changes:
        wanted = set(terms(change.content))
        best = max(range(len(said)), key=lambda i: (len(wanted & said[i][1]), i))
        out.setdefault(said[best][0], []).append(change)
    return out


def _with_sources(document: MemoryDocument, by_thread: dict[str, list[Change]]) -> MemoryDocument:
    """``document`` with each fact the batch added naming its own thread as source."""
    source = {
        change.fact_id: thread
        for thread, changes in by_thread.items()
        for change in changes
        if change.kind == "added" and change.fact_id
    }
    if not source:
        return document
    facts = tuple(
        replace(fact, source=source[fact.id])
        if fact.id in source and fact.source != source[fact.id]
        else fact
        for fact in document.facts
    )
    return document.with_changes(facts=facts)
