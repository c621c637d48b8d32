"""The facade's manual edits: a person adds, edits and deletes facts, or imports a document.

A mixin of :class:`memfold.Memory` (kept apart so the facade stays one screenful per
concern). The rules are in ``edits`` and ``importing``; this only loads, changes and
commits compare-and-set, retrying on a conflict, and redacts what a person types.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from memfold import edits
from memfold._audit import AuditMixin, Describe
from memfold._facts import iso
from memfold.importing import check_import, merge_into
from memfold.model import DocumentError, Fact, MemoryDocument, Scope, checked_scope
from memfold.redact import is_only_redaction
from memfold.updater import Updater

__all__ = ["ManualEdits"]

logger = logging.getLogger("memfold")

_T = TypeVar("_T")


class ManualEdits(AuditMixin):
    """``add_fact``, ``edit_fact``, ``delete_fact`` and ``import_document`` of ``Memory``;
    each commit carries its change events when the store keeps history."""

    clear: Callable[..., None]  # Memory.clear: it also fences the scope's queued updates
    _updater: Updater

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
        scope = checked_scope(user_id, agent)
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
        scope = checked_scope(user_id, agent)
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
        scope = checked_scope(user_id, agent)

        def change(doc: MemoryDocument) -> tuple[MemoryDocument, None]:
            return edits.delete_fact(doc, fact_id, scope=scope, now=self._now()), None

        self._edit(scope, change, describe=self._manual())

    def import_document(
        self,
        data: Mapping[str, Any],
        /,
        *,
        user_id: str | None = None,
        agent: str | None = None,
        merge: bool = False,
        lenient: bool = False,
    ) -> MemoryDocument:
        """Replace the scope's memory with ``data``: a memfold export or DeerFlow's v1
        ``memory.json``. ``merge=True`` adds its facts (and summaries for empty sections)
        to what is stored instead. ``lenient=True`` drops or repairs bad items (each one
        logged; :func:`memfold.importing.check_import` lists them) instead of refusing.

        A replacing import of a scope that holds memory is a ``clear`` (queued and running
        updates of the scope are dropped, and the turns they carried are not learned
        later) followed by the new document. The text is stored as imported; ``context``,
        ``search`` and ``export`` redact it at recall.

        Raises:
            ValueError: ``data`` is not a document memfold knows, or (not lenient) an item
                in it is invalid; the message names it. Nothing stored changes.
        """
        try:
            checked = check_import(data, lenient=lenient)
        except DocumentError as exc:
            raise ValueError(f"cannot import: {exc}") from exc
        for repair in checked.repairs:
            logger.warning("memfold import: %s", repair)
        incoming = checked.document
        scope = checked_scope(user_id, agent)
        if not merge and not self._store.load(scope).is_empty:
            self.clear(user_id=user_id, agent=agent)  # what it replaces is fenced and logged

        def change(doc: MemoryDocument) -> tuple[MemoryDocument, None]:
            if merge:
                return merge_into(doc, incoming)[0], None
            # this scope's thread watermarks stay: what was said before is not re-learned
            kept = incoming.with_changes(
                revision=doc.revision, generation=doc.generation, watermarks=doc.watermarks
            )
            return kept, None

        self._edit(scope, change, describe=self._imported)
        return self._store.load(scope)

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
