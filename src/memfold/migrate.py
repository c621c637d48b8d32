"""Copy every scope from one store to another, idempotently (``memfold migrate``).

For each scope of the source, the target scope is:

* empty (revision 0, never written): the source document is committed there → ``copied``;
* equal in content (everything but ``revision`` and ``generation``, which each store
  keeps for itself): nothing is written → ``identical``;
* different: it was written since (or by someone else), so it is left alone and
  reported in ``conflicts`` — unless ``overwrite=True``, which replaces it → ``copied``.

So a second run copies nothing, and a migration never silently destroys newer memory
in the target. A scope that cannot be read (source) or is corrupt (target) is reported
in ``failed`` and the rest goes on. The target keeps its own generation counter: a
fresh target has no in-flight updates to fence. A copied scope's change history goes
with it, in the same commit, when both stores keep history; its events then carry the
revision of that commit (the target numbers its own revisions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memfold.errors import ConflictError, StorageError
from memfold.model import MemoryDocument, Scope, document_to_dict
from memfold.store.base import HistoryStore, MemoryStore

__all__ = ["MigrationReport", "migrate"]


@dataclass
class MigrationReport:
    """What :func:`migrate` did, scope by scope."""

    copied: list[Scope] = field(default_factory=list)
    identical: list[Scope] = field(default_factory=list)
    conflicts: list[Scope] = field(default_factory=list)
    failed: list[tuple[Scope, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every source scope is now present, unchanged, in the target."""
        return not self.conflicts and not self.failed

    def summary(self) -> str:
        """One line for people: counts, and what to do about conflicts."""
        total = len(self.copied) + len(self.identical) + len(self.conflicts) + len(self.failed)
        line = (
            f"{total} scopes: {len(self.copied)} copied, {len(self.identical)} already "
            f"identical, {len(self.conflicts)} conflicts, {len(self.failed)} failed"
        )
        if self.conflicts:
            line += " (conflicting target scopes were left unchanged; --overwrite replaces them)"
        return line


def _content(document: MemoryDocument) -> dict[str, Any]:
    data = document_to_dict(document)
    del data["revision"], data["generation"]
    return data


def migrate(
    source: MemoryStore, target: MemoryStore, *, overwrite: bool = False
) -> MigrationReport:
    """Copy every scope of ``source`` into ``target`` (see the module doc for the rules).

    Raises:
        StorageError: listing the source or writing the target failed (scopes already
            copied stay copied; running again resumes).
    """
    report = MigrationReport()
    for scope in source.scopes():
        try:
            document = source.load(scope)
        except StorageError as exc:
            report.failed.append((scope, str(exc)))
            continue
        try:
            current = target.load(scope)
        except StorageError as exc:  # a corrupt target row: a person must look at it
            report.failed.append((scope, str(exc)))
            continue
        if current.revision != 0 and _content(current) == _content(document):
            report.identical.append(scope)
            continue
        if current.revision != 0 and not overwrite:
            report.conflicts.append(scope)
            continue
        try:
            if isinstance(source, HistoryStore) and isinstance(target, HistoryStore):
                events = source.history(scope)[::-1]  # oldest first, as they happened
                target.commit(scope, document, expected_revision=current.revision, events=events)
            else:
                target.commit(scope, document, expected_revision=current.revision)
        except ConflictError:  # written meanwhile: someone is using the target already
            report.conflicts.append(scope)
            continue
        report.copied.append(scope)
    return report
