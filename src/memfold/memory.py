"""The ``Memory`` facade: wires configuration to a store, an extractor and a queue.

Business rules live in ``apply``; this module only connects the boxes of DESIGN.md's
data flow and keeps every public call thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from types import TracebackType
from typing import Any, Self, TypeVar

from memfold import _events, edits
from memfold._audit import AuditMixin, Describe
from memfold._batch import BatchResult, ThreadWork
from memfold._facts import iso
from memfold._fence import clear_stamp
from memfold.config import MemoryConfig
from memfold.conversation import capture, has_minimum_dialogue
from memfold.errors import ExtractionError, MemfoldError
from memfold.extract.base import Extractor, Usage
from memfold.gate import ExtractionGate
from memfold.inject import ContextRenderer
from memfold.llm.base import ChatModelError
from memfold.model import (
    DocumentError,
    Fact,
    MemoryDocument,
    Scope,
    checked_scope,
    document_from_dict,
    document_to_dict,
    validate_id,
)
from memfold.queue.base import Job, JobKey, QueueStatus, UpdateQueue
from memfold.queue.clock import Clock
from memfold.redact import (
    is_only_redaction,
    redact_document,
    redact_fact,
    redact_messages,
    redactor_for,
)
from memfold.search import Embedder, Searcher, SearchHit, check_search_args, make_embedder
from memfold.signals import detect
from memfold.store.base import MemoryStore
from memfold.store.factory import open_store
from memfold.tokens import get_counter
from memfold.updater import Updater, UpdateResult

__all__ = ["Memory"]

logger = logging.getLogger("memfold")

_T = TypeVar("_T")


class Memory(AuditMixin):
    """Long-term memory of users for one agent application.

    ``Memory(MemoryConfig(home="./.memfold"))`` or ``Memory.from_file("memfold.yaml")``.
    A context manager: leaving it drains pending updates within the shutdown budget.
    Reading the history, explaining facts and the injected block, editing summaries and
    erasing users are in :class:`memfold._audit.AuditMixin`.
    """

    def __init__(
        self,
        config: MemoryConfig | None = None,
        /,
        *,
        store: MemoryStore | None = None,
        extractor: Extractor | str | None = None,
        chat_model: Any = None,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        now: Callable[[], datetime] | None = None,
        start_workers: bool = True,
        **overrides: Any,
    ) -> None:
        """Build from a config (or keyword overrides of it, e.g. ``home=...``).

        ``store``, ``extractor``, ``chat_model`` and ``embedder`` replace what the config
        would build (tests pass ``memfold.testing`` fakes). ``extractor`` may also be the
        name of the ``extractor`` setting (``"auto"``, ``"llm"``, ``"rules"``).
        ``start_workers=False`` runs queued updates only on ``flush()`` (deterministic
        tests, scripts).

        Raises:
            ConfigError: a setting is invalid or names a missing optional dependency.
            TypeError: ``store`` or ``extractor`` is neither ``None`` nor a store/extractor.
        """
        if isinstance(extractor, str):  # the config key of the same name, not an object
            overrides["extractor"], extractor = extractor, None
        _check_parts(store, extractor)
        if config is None:
            config = MemoryConfig.build(**overrides)
        elif overrides:
            config = MemoryConfig.validated({**config.model_dump(), **overrides})
        self.config = config
        self._now = now or (lambda: datetime.now(UTC))
        self._clock = clock
        self._start_workers = start_workers
        self._store = store if store is not None else open_store(config)
        self._extractor = (
            extractor if extractor is not None else _make_extractor(config, chat_model)
        )
        self._redactor = redactor_for(config)  # security: redact before extraction/storage
        self._counter = get_counter(config.token_encoding)
        self._renderer = ContextRenderer(
            self._counter,
            max_tokens=config.max_injection_tokens,
            guaranteed_categories=config.guaranteed_categories,
            guaranteed_budget=config.guaranteed_token_budget,
            scrub=self._redactor,  # security: old or imported text is redacted at recall
        )
        if embedder is not None and not isinstance(embedder, Embedder):
            raise TypeError(
                f"embedder={embedder!r}: pass an object with a `name` and an "
                "`embed(texts) -> list of vectors` method, or configure `embeddings`"
            )
        self._own_embedder = embedder is None and config.embeddings is not None
        if embedder is None and config.embeddings is not None:
            embedder = make_embedder(config.embeddings)
        self._searcher = Searcher(embedder, clock=time.monotonic if clock is None else clock.now)
        self._updater = Updater(
            self._store,
            self._extractor,
            max_facts=config.max_facts,
            confidence_threshold=config.fact_confidence_threshold,
            now=self._now,
            redactor=self._redactor,  # security: redacts turns and new/changed items
            max_input_tokens=config.max_extraction_input_tokens,
            conflict_timeout=config.conflict_timeout_seconds,
            record_history=self._history_store() is not None,
            gate=_make_gate(config, self._extractor),
        )
        self._clear_takes_stamp = _takes_keyword(self._store.clear, "cleared_at")
        self._queue: UpdateQueue | None = None
        self._lock = threading.Lock()
        self._usage = Usage()
        # (key, first-record time) of jobs that were running when their scope was cleared
        self._fenced: set[tuple[JobKey, float]] = set()
        # ... and of jobs that were running when their user was erased
        self._erased: set[tuple[JobKey, float]] = set()
        self._erasure_counts: dict[str | None, int] = {}
        self._closed = False
        self._close_result = True
        if config.queue != "memory":
            # A durable queue may hold updates a previous process left behind: open it now,
            # so its workers pick them up without waiting for this process's first record.
            try:
                self._get_queue()
            except BaseException:
                self._store.close()  # no Memory to close() it: release its connections now
                raise

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], /, **overrides: Any) -> Memory:
        """Read a YAML config (``MEMFOLD_*`` variables and ``overrides`` win over it)."""
        return cls(MemoryConfig.build(path, **overrides))

    @property
    def extractor_name(self) -> str:
        return self._extractor.name

    # --- capture and background updates ----------------------------------------------

    def record(
        self,
        messages: Iterable[object],
        /,
        *,
        thread_id: str,
        user_id: str | None = None,
        agent: str | None = None,
        urgent: bool = False,
    ) -> bool:
        """Queue the conversation for a background update; returns at once.

        Returns False when nothing was queued (no user + assistant exchange left after
        filtering, the queue refused a new key under backpressure, or this ``Memory`` is
        closed).

        Raises:
            TypeError, ValueError: an id or a message is invalid (nothing is queued).
        """
        scope = _scope(user_id, agent)
        key: JobKey = (_thread(thread_id), scope.user_id, scope.agent)
        kept = capture(messages, upload_tags=self.config.upload_tags)
        if not has_minimum_dialogue(kept):
            return False
        if self.config.queue != "memory":
            # security: a durable queue writes the turns to disk, so redact them first; the
            # in-process queue leaves it to the worker (the updater), off the agent's turn.
            kept = redact_messages(kept, self._redactor)
        if self._closed:
            # memory must never break an agent's turn: a record racing shutdown is refused
            logger.warning("record for thread %r refused: this Memory is closed", thread_id)
            return False
        return self._get_queue().add(
            key, kept, detect(kept), urgent=urgent, recorded_at=self._now().timestamp()
        )

    async def arecord(
        self,
        messages: Iterable[object],
        /,
        *,
        thread_id: str,
        user_id: str | None = None,
        agent: str | None = None,
        urgent: bool = False,
    ) -> bool:
        """``record`` for async callers. With the in-process queue it does no IO and runs
        inline; a durable queue writes to its database, so that happens in a thread."""
        if self.config.queue == "memory":
            return self.record(
                messages, thread_id=thread_id, user_id=user_id, agent=agent, urgent=urgent
            )
        return await asyncio.to_thread(
            functools.partial(
                self.record,
                messages,
                thread_id=thread_id,
                user_id=user_id,
                agent=agent,
                urgent=urgent,
            )
        )

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Run every pending update now, due or not; True when the queue drained."""
        return True if self._queue is None else self._queue.flush(timeout)

    async def aflush(self, timeout: float | None = 30.0) -> bool:
        return await asyncio.to_thread(self.flush, timeout)

    def status(self) -> QueueStatus:
        """Queue counters, plus the LLM tokens spent by updates so far."""
        base = QueueStatus() if self._queue is None else self._queue.status()
        with self._lock:
            usage = self._usage
        return replace(
            base, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
        )

    def _get_queue(self) -> UpdateQueue:
        with self._lock:
            if self._closed:
                raise MemfoldError("this Memory is closed; create a new one")
            if self._queue is None:
                from memfold.queue.factory import open_queue

                self._queue = open_queue(
                    self.config,
                    self._process_job,
                    clock=self._clock,
                    start=self._start_workers,
                    process_batch=self._process_jobs,
                )
            return self._queue

    def _process_job(self, job: Job) -> UpdateResult:
        # A retry keeps the key and the first-record time, so it stays fenced too.
        mark = (job.key, job.enqueued_at)
        with self._counting_failed_calls():
            result = self._updater.run(
                job.scope, job.thread_id, job.messages, job.signals,
                fenced=lambda: mark in self._fenced, erased=lambda: mark in self._erased,
                recorded_at=job.recorded_at, marks=job.marks,
            )  # fmt: skip
        with self._lock:
            self._fenced.discard(mark)
            self._erased.discard(mark)
        self._add_usage(result.usage)
        return result

    def _process_jobs(self, jobs: Sequence[Job]) -> BatchResult:
        """Several due threads of one (user, agent): one extraction for all where they fit."""
        marks = [(job.key, job.enqueued_at) for job in jobs]
        works = [
            ThreadWork(
                job.thread_id, job.messages, job.signals,
                fenced=functools.partial(self._fenced.__contains__, mark),
                erased=functools.partial(self._erased.__contains__, mark),
                recorded_at=job.recorded_at, marks=job.marks,
            )
            for job, mark in zip(jobs, marks, strict=True)
        ]  # fmt: skip
        result = self._updater.run_batch(jobs[0].scope, works)
        with self._lock:
            for mark in marks:
                self._fenced.discard(mark)
                self._erased.discard(mark)
        self._add_usage(result.usage)
        return result

    def _add_usage(self, usage: Usage) -> None:
        with self._lock:
            self._usage = self._usage + usage

    # --- synchronous update -----------------------------------------------------------

    def update(
        self,
        messages: Iterable[object],
        /,
        *,
        thread_id: str,
        user_id: str | None = None,
        agent: str | None = None,
    ) -> UpdateResult:
        """Extract, apply and commit now, in the calling thread.

        Raises:
            ExtractionError: the extractor's output was unusable.
            StorageError: the store failed (stored memory intact).
            TypeError, ValueError: an id or a message is invalid.
        """
        _thread(thread_id)
        scope = _scope(user_id, agent)
        # the updater redacts them before extraction
        kept = capture(messages, upload_tags=self.config.upload_tags)
        if not has_minimum_dialogue(kept):
            doc = self._store.load(scope)
            return UpdateResult(scope, thread_id, doc.revision, False, skipped="no dialogue")
        with self._counting_failed_calls():
            result = self._updater.run(
                scope, thread_id, kept, detect(kept), recorded_at=self._now().timestamp()
            )
        self._add_usage(result.usage)
        return result

    @contextlib.contextmanager
    def _counting_failed_calls(self) -> Iterator[None]:
        """Count the tokens of a model call whose reply could not be used: it was paid for."""
        try:
            yield
        except (ExtractionError, ChatModelError) as exc:
            if exc.usage is not None:
                self._add_usage(exc.usage)
            raise

    # --- reading ------------------------------------------------------------------------

    def get(self, *, user_id: str | None = None, agent: str | None = None) -> MemoryDocument:
        """The scope's document (immutable; empty when nothing is stored)."""
        return self._store.load(_scope(user_id, agent))

    def context(
        self,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        max_tokens: int | None = None,
        today: date | None = None,
        query: str | None = None,
    ) -> str:
        """The ``<user_memory>`` block to put in a system prompt; "" when memory is empty.

        It never exceeds ``max_tokens`` (default ``max_injection_tokens``), wrapper included.
        With ``query`` (the user's latest message), the facts most relevant to it are
        taken first after the guaranteed ones, then the rest by confidence.

        Raises:
            TypeError: ``query`` is neither a string nor None.
        """
        scope = _scope(user_id, agent)
        document, today, relevance = self._injection_inputs(scope, today, query)
        return self._renderer.render(
            scope, document, max_tokens=max_tokens, today=today, relevance=relevance
        )

    def _injection_inputs(
        self, scope: Scope, today: date | None, query: str | None
    ) -> tuple[MemoryDocument, date | None, tuple[str, ...]]:
        """What the block of ``scope`` is rendered from: the document, the date line and
        the relevance order for ``query`` (shared by ``context`` and ``explain_context``).

        Raises:
            TypeError: ``query`` is neither a string nor None.
        """
        if query is not None and not isinstance(query, str):
            raise TypeError(f"query must be a string or None, not {type(query).__name__}")
        if today is None and self.config.include_date:
            today = self._now().date()
        document = self._store.load(scope)
        relevance: tuple[str, ...] = ()
        if query and query.strip() and document.facts:
            relevance = self._searcher.relevance(scope, document.facts, query)
        return document, today, relevance

    async def acontext(
        self,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        max_tokens: int | None = None,
        query: str | None = None,
    ) -> str:
        return await asyncio.to_thread(
            self.context, user_id=user_id, agent=agent, max_tokens=max_tokens, query=query
        )

    def search(
        self,
        query: str,
        /,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        limit: int = 10,
        category: str | None = None,
    ) -> list[SearchHit]:
        """The scope's facts that best match ``query``, best first (at most ``limit``).

        Lexical (BM25, English and Chinese) over content and category; hybrid with the
        configured ``embeddings``. ``category`` keeps only facts of that category. Only
        facts that match are returned, so the list may be shorter than ``limit`` or empty.

        Raises:
            TypeError: ``query`` is not a string, ``limit`` not an int, ``category`` not a
                string or None.
            ValueError: ``query`` is empty or ``limit`` is outside 1..1000.
        """
        check_search_args(query, limit, category)
        scope = _scope(user_id, agent)
        document = self._store.load(scope)
        if not document.facts:
            return []
        hits = self._searcher.search(scope, document.facts, query, limit=limit, category=category)
        # security: results go to an agent's prompt like context(): redact at recall
        return [
            hit if (fact := redact_fact(hit.fact, self._redactor)) is hit.fact
            else replace(hit, fact=fact)
            for hit in hits
        ]  # fmt: skip

    async def asearch(
        self,
        query: str,
        /,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        limit: int = 10,
        category: str | None = None,
    ) -> list[SearchHit]:
        """``search`` for async callers (the store and any embeddings call run in a thread)."""
        return await asyncio.to_thread(
            functools.partial(
                self.search, query, user_id=user_id, agent=agent, limit=limit, category=category
            )
        )

    def export(
        self, *, user_id: str | None = None, agent: str | None = None, redact: bool = True
    ) -> dict[str, Any]:
        """The scope's document as JSON-ready data. Facts and summaries are redacted with
        the configured redactor (text stored before a pattern existed, or imported);
        ``redact=False`` gives the stored text as it is, for a backup."""
        document = self.get(user_id=user_id, agent=agent)
        if redact:
            document = redact_document(document, self._redactor)  # security: at recall
        return document_to_dict(document)

    # --- editing ------------------------------------------------------------------------

    def add_fact(
        self,
        content: str,
        /,
        *,
        category: str = "context",
        confidence: float = 0.9,
        user_id: str | None = None,
        agent: str | None = None,
    ) -> Fact:
        """Add a manual fact (protected from automatic removal unless the user corrects it).

        Raises:
            DuplicateFactError: the same content is already stored.
            ValueError: empty content, a category that is not a short label (or holds a
                secret), or a confidence outside [0, 1].
        """
        scope = _scope(user_id, agent)
        content = self._redact_fact(content)

        def change(doc: MemoryDocument) -> tuple[MemoryDocument, Fact]:
            return edits.add_fact(
                doc, content, category=category, confidence=confidence, now=self._now(),
                max_facts=self.config.max_facts, scope=scope, scrub=self._redactor,
            )  # fmt: skip

        reason = f"over max_facts={self.config.max_facts}: room for a fact added by hand"
        return self._edit(scope, change, describe=self._manual(gone=("evicted", reason)))

    def edit_fact(
        self,
        fact_id: str,
        /,
        *,
        content: str | None = None,
        category: str | None = None,
        confidence: float | None = None,
        user_id: str | None = None,
        agent: str | None = None,
    ) -> Fact:
        """Change a fact's content, category or confidence.

        Raises:
            FactNotFoundError: no such fact in the scope.
            DuplicateFactError: the new content duplicates another fact.
        """
        scope = _scope(user_id, agent)
        content = self._redact_fact(content)

        def change(doc: MemoryDocument) -> tuple[MemoryDocument, Fact]:
            return edits.edit_fact(
                doc, fact_id, content=content, category=category, confidence=confidence,
                now=self._now(), scope=scope, scrub=self._redactor,
            )  # fmt: skip

        return self._edit(scope, change, describe=self._manual())

    def delete_fact(
        self, fact_id: str, /, *, user_id: str | None = None, agent: str | None = None
    ) -> None:
        """Delete a fact; its content also leaves the summaries (rebuilt, or held out of
        injection until rewritten). The history keeps a ``removed`` event.

        Raises:
            FactNotFoundError: the fact does not exist.
        """
        scope = _scope(user_id, agent)

        def change(doc: MemoryDocument) -> tuple[MemoryDocument, None]:
            return edits.delete_fact(doc, fact_id, scope=scope, now=self._now()), None

        self._edit(scope, change, describe=self._manual())

    def clear(self, *, user_id: str | None = None, agent: str | None = None) -> None:
        """Forget everything in one scope, including what was said before the clear.

        Updates waiting in the queue are dropped and one already running is discarded;
        their turns are marked seen, so a thread that goes on is not re-learned from them.
        """
        scope = _scope(user_id, agent)
        queue = self._queue
        dropped = () if queue is None else queue.discard(scope)
        # A job a worker has taken may not have loaded the document yet, so the generation
        # fence cannot see this clear; name it fenced instead.
        running = getattr(queue, "running_jobs", None)
        if running is not None:
            with self._lock:
                self._fenced.update((job.key, job.enqueued_at) for job in running(scope))
        # The stamp fences, in every process and replica, jobs holding turns recorded
        # before it: the ones in flight and those in other processes' in-memory queues.
        options: dict[str, Any] = {}
        if self._clear_takes_stamp:  # a third-party store without it fences this process only
            options["cleared_at"] = clear_stamp(self._now())
        if self._history_store() is not None:
            options["events"] = (_events.cleared(self._store.load(scope), at=iso(self._now())),)
        if options:
            clear: Callable[..., MemoryDocument] = self._store.clear
            clear(scope, **options)
        else:
            self._store.clear(scope)
        self._searcher.forget(scope)
        for job in dropped:
            # the watermark is computed on redacted turns, as the updater sees them
            seen = redact_messages(job.messages, self._redactor)
            self._updater.retry(
                scope, functools.partial(self._updater.mark_seen, scope, job.thread_id, seen)
            )

    def import_document(
        self, data: Mapping[str, Any], /, *, user_id: str | None = None, agent: str | None = None
    ) -> MemoryDocument:
        """Replace the scope's memory with ``data`` (memfold format or v1 ``memory.json``).

        Updates in flight for the scope are fenced like a ``clear``.

        Raises:
            ValueError: the data is not a memory document (the message names the field).
        """
        try:
            incoming = document_from_dict(data)
        except DocumentError as exc:
            raise ValueError(f"cannot import: {exc}") from exc

        def change(doc: MemoryDocument) -> tuple[MemoryDocument, MemoryDocument]:
            merged = incoming.with_changes(
                revision=doc.revision,
                generation=doc.generation + 1,
                watermarks={},
                cleared_at=clear_stamp(self._now()),  # fences updates like a clear
            )
            return merged, merged

        self._edit(_scope(user_id, agent), change, describe=self._imported)
        return self.get(user_id=user_id, agent=agent)

    def _redact_fact(self, content: object) -> Any:
        """security: a fact a person types is redacted like conversation text, and one that
        is nothing but a secret is refused rather than stored as a marker. Anything that
        is not text is passed on for ``edits`` to reject with its own message."""
        if self._redactor is None or not isinstance(content, str):
            return content
        clean = self._redactor(content)
        if is_only_redaction(clean):
            raise ValueError(
                "this fact holds only a secret, which memfold never stores; "
                "describe it without the secret (e.g. 'Uses an OpenAI API key')"
            )
        return clean

    def _edit(
        self,
        scope: Scope,
        change: Callable[[MemoryDocument], tuple[MemoryDocument, _T]],
        *,
        describe: Describe | None = None,
    ) -> _T:
        """Load, change and commit (retried on conflict); ``describe`` gives the change
        events the commit carries when history is kept."""
        store = self._history_store()

        def attempt() -> _T:
            doc = self._store.load(scope)
            new_doc, value = change(doc)
            if store is None or describe is None or new_doc is doc:
                self._store.commit(scope, new_doc, expected_revision=doc.revision)
            else:
                events = describe(doc, new_doc, new_doc.last_updated or iso(self._now()))
                store.commit(scope, new_doc, expected_revision=doc.revision, events=events)
            return value

        return self._updater.retry(scope, attempt)

    # --- lifecycle -------------------------------------------------------------------

    def close(self, timeout: float | None = None) -> bool:
        """Drain pending updates within ``timeout`` (default ``shutdown_timeout_seconds``),
        stop the workers and release the store. True when everything was processed; a
        second call returns the first one's result."""
        with self._lock:
            if self._closed:
                return self._close_result
            self._closed = True
            queue = self._queue
        drained = True
        try:
            if queue is not None:
                limit = self.config.shutdown_timeout_seconds if timeout is None else timeout
                drained = queue.close(limit)
        except BaseException:
            drained = False
            raise
        finally:
            with self._lock:
                self._close_result = drained
            self._store.close()
            embedder_close = getattr(self._searcher.embedder, "close", None)
            if self._own_embedder and callable(embedder_close):
                embedder_close()
        return drained

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _takes_keyword(function: Callable[..., object], name: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def _check_parts(store: object, extractor: object) -> None:
    if store is not None and not isinstance(store, MemoryStore):
        hint = f"; for a built-in store pass storage={store!r}" if isinstance(store, str) else ""
        raise TypeError(
            f"store must be a MemoryStore (load, commit, clear, scopes, close), got "
            f"{type(store).__name__}{hint}"
        )
    if extractor is not None and not isinstance(extractor, Extractor):
        raise TypeError(
            f"extractor must be an Extractor (a name and propose()) or one of 'auto', 'llm', "
            f"'rules', got {type(extractor).__name__}"
        )


_scope = checked_scope


def _thread(thread_id: object) -> str:
    """Raises TypeError, ValueError: ``thread_id`` cannot name a conversation."""
    return validate_id(thread_id, "thread_id")


def _make_gate(config: MemoryConfig, extractor: Extractor) -> ExtractionGate | None:
    """The extraction gate, for extractors whose calls cost (``calls_model``), unless
    ``extraction_gate`` is off."""
    if not config.extraction_gate or not getattr(extractor, "calls_model", False):
        return None
    from memfold.extract.rules import RuleExtractor

    return ExtractionGate(RuleExtractor(config.rule_pattern_files, log_misses=False))


def _make_extractor(config: MemoryConfig, chat_model: Any) -> Extractor:
    use_llm = config.extractor == "llm" or (
        config.extractor == "auto" and (config.llm is not None or chat_model is not None)
    )
    if use_llm:
        from memfold.extract.llm import LLMExtractor
        from memfold.llm.factory import make_chat_model

        if chat_model is None and config.llm is not None:
            chat_model = make_chat_model(config.llm)
        extractor: Extractor = LLMExtractor(
            chat_model,
            counter=get_counter(config.token_encoding).count,
            timeout=config.extraction_timeout_seconds,
            categories=config.categories,
            view_max_facts=config.view_max_facts,
            view_max_tokens=config.view_max_tokens,
        )
        model = config.llm.model if config.llm is not None else type(chat_model).__name__
        logger.info("memfold extractor: llm (%s)", model)
    else:
        from memfold.extract.rules import RuleExtractor

        extractor = RuleExtractor(config.rule_pattern_files)
        logger.info("memfold extractor: rules (offline; configure llm to use a model)")
    return extractor
