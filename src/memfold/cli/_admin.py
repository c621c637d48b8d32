"""Commands that change whole scopes or the queue: ``import``, ``clear``, ``flush``, ``migrate``.

Destructive ones ask first (on a terminal) or need ``--yes``; without a terminal and
without ``--yes`` they refuse (exit 1) rather than guess.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memfold.cli._app import CheckFailed, InputError, Options, cli, scope_options
from memfold.cli._output import echo_json, note, plural

if TYPE_CHECKING:
    from memfold.model import MemoryDocument

__all__ = ["clear", "flush", "import_", "migrate"]


def _contents(document: MemoryDocument) -> str:
    summaries = sum(1 for s in document.summaries.values() if s.summary.strip())
    return f"{plural(len(document.facts), 'fact')} and {plural(summaries, 'summary', 'summaries')}"


def _confirm(question: str, *, yes: bool, refusal: str) -> None:
    """Go on when ``yes``, or when the person at the terminal agrees; else refuse (exit 1)."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise CheckFailed(refusal)
    if not click.confirm(question, default=False):
        raise CheckFailed("not confirmed; nothing was changed")


def _read_json(file: Path) -> Any:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {file}: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{file} is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise InputError(f"{file} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError(f"{file}: {exc}") from None


@cli.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--merge", is_flag=True, help="Add the file's facts to what is stored instead.")
@click.option(
    "--lenient",
    is_flag=True,
    help="Drop or repair bad items (null content, bad confidence…) and list them.",
)
@click.option("--yes", is_flag=True, help="Replace stored memory without asking.")
@scope_options
@click.pass_obj
def import_(options: Options, file: Path, merge: bool, lenient: bool, yes: bool) -> None:
    """Load FILE into one scope: a memfold export or DeerFlow's v1 memory.json.

    It replaces what the scope holds (asking first when that is not empty), or adds to it
    with --merge.
    """
    from memfold.importing import check_import
    from memfold.model import DocumentError

    data = _read_json(file)
    try:
        checked = check_import(data, lenient=lenient)
    except DocumentError as exc:
        raise CheckFailed(f"refused {file}: {exc}") from None
    for repair in checked.repairs:
        note(f"repaired: {repair}")
    incoming = checked.document
    with options.opened() as mem:
        current = mem.get(**options.scope)
        has_memory = bool(current.facts) or not current.is_empty
        if has_memory and not merge:
            _confirm(
                f"Replace the {_contents(current)} of {options.who()} with the "
                f"{_contents(incoming)} in {file}?",
                yes=yes,
                refusal=f"{options.who()} already has {_contents(current)}; pass --yes to "
                "replace them with the file, or --merge to add the file's facts",
            )
        stored = mem.import_document(data, **options.scope, merge=merge, lenient=lenient)
    kind = "DeerFlow v1 memory.json" if checked.format == "deerflow-v1" else "memfold export"
    if merge:
        added = len(stored.facts) - len(current.facts)
        click.echo(
            f"merged {file} ({kind}): {plural(added, 'fact')} added, "
            f"{len(incoming.facts) - added:,} already present (revision {stored.revision})"
        )
    elif has_memory:
        click.echo(
            f"replaced {_contents(current)} with {_contents(stored)} from {file} "
            f"({kind}; revision {stored.revision})"
        )
    else:
        click.echo(f"imported {plural(len(stored.facts), 'fact')} from {file} ({kind}; "
                   f"revision {stored.revision})")  # fmt: skip
    if checked.repairs:
        note(f"{plural(len(checked.repairs), 'item')} dropped or repaired (listed above)")


@cli.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@scope_options
@click.pass_obj
def clear(options: Options, yes: bool) -> None:
    """Forget everything in one scope (user, or user and agent)."""
    with options.opened() as mem:
        current = mem.get(**options.scope)
        if current.revision == 0:
            note(f"nothing is stored for {options.who()}; nothing to clear")
            return
        _confirm(
            f"Forget the {_contents(current)} of {options.who()} for good?",
            yes=yes,
            refusal=f"clearing {options.who()} needs confirmation; pass --yes",
        )
        mem.clear(**options.scope)
    click.echo(f"cleared {options.who()}: {_contents(current)} forgotten")


@cli.command()
@click.option("--timeout", type=click.FloatRange(min=0), default=None,
              help="Seconds to wait (default: shutdown_timeout_seconds).")  # fmt: skip
@scope_options
@click.pass_obj
def flush(options: Options, timeout: float | None) -> None:
    """Run the updates waiting in the durable queue now (queue: sqlite or postgres)."""
    config = options.settings()
    if config.queue == "memory":
        note("queue: memory is in-process, so nothing waits between CLI runs: nothing to flush")
        return
    with options.opened() as mem:
        before = mem.status()
        drained = mem.flush(config.shutdown_timeout_seconds if timeout is None else timeout)
        after = mem.status()
    ran = after.processed - before.processed
    left = after.pending + after.in_flight
    click.echo(f"ran {plural(ran, 'update')}; {left:,} left in the queue")
    if after.failed > before.failed:
        note(f"{plural(after.failed - before.failed, 'attempt')} failed: {after.last_error}")
    if not drained:
        raise CheckFailed(f"{plural(left, 'update')} still queued after the timeout")


@cli.command()
@click.option("--to", "to", type=click.Choice(["sqlite", "postgres"]), required=True)
@click.option("--dsn", help="PostgreSQL connection string (default: `dsn` in the config).")
@click.option("--overwrite", is_flag=True, help="Replace target scopes that differ.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@scope_options
@click.pass_obj
def migrate(options: Options, to: str, dsn: str | None, overwrite: bool, as_json: bool) -> None:
    """Copy every scope from the configured store into a SQLite or PostgreSQL store."""
    from memfold.config import mask_secrets
    from memfold.migrate import migrate as copy_scopes
    from memfold.store.factory import open_store

    source_config = options.settings()
    target_config = source_config.replace(storage=to, dsn=dsn or source_config.dsn)
    if source_config.storage == to and (to == "sqlite" or target_config.dsn == source_config.dsn):
        raise click.UsageError(
            f"the configured store already is this {to} store: nothing to migrate"
        )
    source = open_store(source_config)
    try:
        target = open_store(target_config)
        try:
            report = copy_scopes(source, target, overwrite=overwrite)
        finally:
            target.close()
    finally:
        source.close()
    if as_json:
        echo_json({"to": to, "summary": report.summary(), "ok": report.ok,
                   "failed": [{"scope": str(s), "reason": mask_secrets(r)}
                              for s, r in report.failed]})  # fmt: skip
    else:
        click.echo(f"migrated to {to}: {report.summary()}")
        for scope, reason in report.failed:
            note(f"failed {scope}: {reason}")
    if not report.ok:
        raise CheckFailed(f"migration to {to} incomplete: {report.summary()}")
