"""The ``Memory`` facade: wires configuration to a store, an extractor and a queue.

Business rules live in ``apply``; this module only connects the boxes of the data flow
(capture → queue → update → inject, drawn in README.md) and keeps every call thread-safe.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from types import TracebackType
from typing import Any, Self, TypeVar

from memfold import _events, _exit
from memfold._async_facade import AsyncFacade
from memfold._batch import BatchResult, ThreadWork
from memfold._facts import iso
from memfold._fence import clear_stamp
from memfold._manual import ManualEdits
from memfold.config import MemoryConfig
from memfold.conversation import capture, has_minimum_dialogue
from memfold.errors import ExtractionError, MemfoldError
from memfold.extract.base import Extractor, Usage
from memfold.extract.factory import make_extractor, make_gate
from memfold.inject import ContextRenderer
from memfold.layers import layer
from memfold.llm.base import ChatModelError
from memfold.model import (
    MemoryDocument,
    Scope,
    checked_scope,
    document_to_dict,
    validate_id,
)
from memfold.queue.base import Job, JobKey, QueueStatus, UpdateQueue
from memfold.queue.clock import Clock
from memfold.redact import redact_document, redact_fact, redact_messages, redactor_for
from memfold.search import Embedder, Searcher, SearchHit, check_search_args, make_embedder
from memfold.signals import detect
from memfold.store.base import MemoryStore
from memfold.store.factory import open_store
from memfold.updater import Updater, UpdateResult

__all__ = ["Memory"]

logger = logging.getLogger("memfold")

_T = TypeVar("_T")


class Memory(ManualEdits, AsyncFacade):
    """Long-term memory of users for one agent application.

    ``Memory(MemoryConfig(home="./.memfold"))`` or ``Memory.from_file("memfold.yaml")``.
    A context manager: leaving it drains pending updates within the shutdown budget. One
    that is never closed is closed at interpreter exit, with the same budget. Manual
    edits and imports are in :class:`memfold._manual.ManualEdits`; the history,
    explanations, summaries and erasure in :class:`memfold._audit.AuditMixin`.
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
        would build (tests pass ``memfold.testing`` fakes). ``chat_model`` is any LangChain
        chat model or a memfold ``ChatModel``. ``extractor`` may also be the name of the
        ``extractor`` setting (``"auto"``, ``"llm"``, ``"rules"``). ``start_workers=False``
        runs queued updates only on ``flush()`` or ``close()`` (deterministic tests,
        scripts, the CLI), and opens a durable queue only when a call needs it.

        Raises:
            ConfigError: a setting is invalid or names a missing optional dependency.
            TypeError: ``store`` or ``extractor`` is neither ``None`` nor a store/extractor,
                or ``chat_model`` is not a chat model.
        """
        if isinstance(extractor, str):  # the config key of the same name, not an object
            overrides["extractor"], extractor = extractor, None
        _check_parts(store, extractor)
        if config is None:
            config = MemoryConfig.build(**overrides)
        elif overrides:
            config = config.replace(**overrides)
        self.config = config
        self._now = now or (lambda: datetime.now(UTC))
        self._clock = clock
        self._start_workers = start_workers
        self._extractor: Extractor = (
            make_extractor(config, chat_model) if extractor is None else extractor
        )
        self._store = store if store is not None else open_store(config)
        self._redactor = redactor_for(config)  # security: redact before extraction/storage
        # built on the first context(): the token table loads only when something is counted
        self._context_renderer: ContextRenderer | None = None
        self._renderer_lock = threading.Lock()
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
            gate=make_gate(config, self._extractor),
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
        self._jobs_done = self._jobs_failed = 0  # reported by the exit drain
        if config.queue != "memory" and start_workers:
            # A durable queue may hold updates a previous process left behind: open it now,
            # so its workers pick them up without waiting for this process's first record.
            try:
                self._get_queue()
            except BaseException:
                self._store.close()  # no Memory to close() it: release its connections now
                raise
        _exit.track(self)

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

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Run every pending update now, due or not; True when the queue drained. With a
        durable queue that includes updates other processes left queued."""
        queue = self._open_durable_queue()
        return True if queue is None else queue.flush(timeout)

    def status(self) -> QueueStatus:
        """Queue counters, plus the LLM tokens spent by updates so far. A durable queue
        reports its table (every process's pending updates) and runs nothing.

        Raises:
            StorageError: a durable queue's database cannot be read.
        """
        queue = self._open_durable_queue()
        base = QueueStatus() if queue is None else queue.status()
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

    def _open_durable_queue(self) -> UpdateQueue | None:
        """The queue; a durable one is opened on demand (its table may hold updates)."""
        if self._queue is None and self.config.queue != "memory" and not self._closed:
            return self._get_queue()
        return self._queue

    def _process_job(self, job: Job) -> UpdateResult:
        # A retry keeps the key and the first-record time, so it stays fenced too.
        mark = (job.key, job.enqueued_at)
        try:
            with self._counting_failed_calls():
                result = self._updater.run(
                    job.scope, job.thread_id, job.messages, job.signals,
                    fenced=lambda: mark in self._fenced, erased=lambda: mark in self._erased,
                    recorded_at=job.recorded_at, marks=job.marks,
                )  # fmt: skip
        except BaseException:
            with self._lock:
                self._jobs_failed += 1
            raise
        with self._lock:
            self._fenced.discard(mark)
            self._erased.discard(mark)
            self._jobs_done += 1
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
        try:
            with self._counting_failed_calls():
                result = self._updater.run_batch(jobs[0].scope, works)
        except BaseException:
            with self._lock:
                self._jobs_failed += len(jobs)
            raise
        with self._lock:
            for mark in marks:
                self._fenced.discard(mark)
                self._erased.discard(mark)
            self._jobs_done += len(jobs)
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
        reprocess: bool = False,
    ) -> UpdateResult:
        """Extract, apply and commit now, in the calling thread.

        Only turns after the thread's watermark are extracted; ``reprocess=True`` extracts
        the whole conversation again (after switching extractor, or a ``clear``); facts
        already stored are not duplicated. A conversation needs a user message and an
        assistant reply: without both it is skipped (``skipped="no dialogue"``).

        Raises:
            ExtractionError: the extractor's output was unusable.
            ChatModelError: the LLM could not be reached or refused the request.
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
                scope, thread_id, kept, detect(kept), recorded_at=self._now().timestamp(),
                reprocess=reprocess,
            )  # fmt: skip
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

    @property
    def _renderer(self) -> ContextRenderer:
        if self._context_renderer is None:
            with self._renderer_lock:
                if self._context_renderer is None:
                    self._context_renderer = ContextRenderer.from_config(
                        self.config,
                        scrub=self._redactor,  # security: old or imported text is redacted
                    )
        return self._context_renderer

    def context(
        self,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        max_tokens: int | None = None,
        today: date | None = None,
        include_shared: bool | None = None,
        query: str | None = None,
    ) -> str:
        """The ``<user_memory>`` block to put in a system prompt; "" when memory is empty.

        It never exceeds ``max_tokens`` (default ``max_injection_tokens``), wrapper included.
        For an agent, the user's shared memory is layered beneath the agent's own (its
        facts win on duplicates, one budget for both) unless ``include_shared`` (default:
        the config key of that name) is False. With ``query`` (the user's latest message),
        the facts most relevant to it are taken first after the guaranteed ones, then the
        rest by confidence.

        Raises:
            TypeError: ``query`` is neither a string nor None.
        """
        scope = _scope(user_id, agent)
        document, today, relevance = self._injection_inputs(
            scope, today, query, include_shared=include_shared
        )
        return self._renderer.render(
            scope, document, max_tokens=max_tokens, today=today, relevance=relevance
        )

    def _injection_inputs(
        self,
        scope: Scope,
        today: date | None,
        query: str | None,
        *,
        include_shared: bool | None = None,
    ) -> tuple[MemoryDocument, date | None, tuple[str, ...]]:
        """What the block of ``scope`` is rendered from: the document (an agent's with the
        shared memory layered beneath, see ``include_shared``), the date line and the
        relevance order for ``query`` (shared by ``context`` and ``explain_context``; the
        renderer caches blocks by content, so a layered document needs no key of its own).

        Raises:
            TypeError: ``query`` is neither a string nor None.
        """
        user_id, agent = scope.user_id, scope.agent
        if query is not None and not isinstance(query, str):
            raise TypeError(f"query must be a string or None, not {type(query).__name__}")
        if today is None and self.config.include_date:
            today = self._now().date()
        document = self._store.load(scope)
        shared = self.config.include_shared if include_shared is None else include_shared
        if agent is not None and shared:
            document = layer(self._store.load(Scope(user_id, None)), document)
        relevance: tuple[str, ...] = ()
        if query and query.strip() and document.facts:
            relevance = self._searcher.relevance(scope, document.facts, query)
        return document, today, relevance

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

    # --- editing (add_fact, edit_fact, delete_fact, import_document: ManualEdits) -------

    def clear(self, *, user_id: str | None = None, agent: str | None = None) -> None:
        """Forget everything in one scope, including what was said before the clear.

        Updates waiting in the queue are dropped and one already running is discarded;
        their turns are marked seen, so a thread that goes on is not re-learned from them.
        """
        scope = _scope(user_id, agent)
        queue = self._open_durable_queue()
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

    # --- lifecycle -------------------------------------------------------------------

    def close(self, timeout: float | None = None) -> bool:
        """Drain pending updates within ``timeout`` (default ``shutdown_timeout_seconds``),
        stop the workers and release the store. True when everything was processed; a
        second call returns the first one's result. ``timeout=0`` runs nothing: a durable
        queue keeps its updates for the next process, the in-process queue loses them
        (logged)."""
        _exit.untrack(self)
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

    def _close_at_exit(self) -> None:
        """``close()`` at interpreter exit, logging what the drain ran and left."""
        queue = self._queue
        try:
            before = QueueStatus() if queue is None else queue.status()
        except Exception:  # a durable queue's database may be gone by now
            before = QueueStatus()
        with self._lock:
            done, failed = self._jobs_done, self._jobs_failed
        drained = self.close()
        with self._lock:
            ran, failed = self._jobs_done - done, self._jobs_failed - failed
        _exit.report(
            pending=before.pending + before.in_flight, ran=ran, failed=failed, drained=drained,
            durable=self.config.queue != "memory",
            budget=self.config.shutdown_timeout_seconds,
        )  # fmt: skip

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
