"""The ``memfold`` command line: a thin shell over :class:`memfold.Memory`.

Errors print one line and exit with status 2, never a traceback.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn, TypedDict

import click

from memfold import _cli_commands as _audit_commands
from memfold.config import MemoryConfig
from memfold.conversation import capture
from memfold.errors import MemfoldError
from memfold.eval.command import eval_group
from memfold.inject import SECTION_LABELS
from memfold.memory import Memory
from memfold.model import HISTORY_SECTIONS, USER_SECTIONS, MemoryDocument
from memfold.server import cli as server_cli

__all__ = ["main"]

_SECTION_TITLES = SECTION_LABELS


class _ScopeArgs(TypedDict):
    user_id: str | None
    agent: str | None


@dataclass
class _Options:
    home: str | None
    config: str | None
    user: str | None
    agent: str | None

    def memory(self) -> Memory:
        overrides: dict[str, Any] = {}
        if self.home is not None:
            overrides["home"] = self.home
        return Memory(MemoryConfig.build(self.config, **overrides), start_workers=False)

    @property
    def scope(self) -> _ScopeArgs:
        return {"user_id": self.user, "agent": self.agent}


def _fail(message: str) -> NoReturn:
    click.echo(f"memfold: error: {message}", err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", help="Memory folder (default ./.memfold, or `home` in the config).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="YAML config file.")
@click.option("--user", help="User id (default: the single default user).")
@click.option("--agent", help="Agent bucket (default: the user's shared memory).")
@click.option("-v", "--verbose", is_flag=True, help="Log what memfold does.")
@click.pass_context
def cli(  # noqa: PLR0917 (click passes options positionally)
    ctx: click.Context,
    home: str | None,
    config_file: str | None,
    user: str | None,
    agent: str | None,
    verbose: bool,
) -> None:
    """memfold: long-term user memory for LLM agents."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = _Options(home, config_file, user, agent)


# --- ingest ------------------------------------------------------------------------------


@dataclass
class _Conversation:
    thread_id: str
    user_id: str | None
    agent: str | None
    messages: list[Any]


def _conversation(data: Any, where: str, default: _Options) -> _Conversation:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object with thread_id and messages")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ValueError(f"{where}: 'messages' must be a list of messages")
    thread_id = data.get("thread_id") or data.get("threadId")
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError(f"{where}: 'thread_id' must be a non-empty string")
    user_id = data.get("user_id", default.user)
    agent = data.get("agent", default.agent)
    for name, value in (("user_id", user_id), ("agent", agent)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{where}: {name!r} must be a string or null")
        if value == "":
            raise ValueError(f"{where}: {name!r} must not be empty; use null for the default")
    try:  # check every message's shape now, so a bad one stops the run before any commit
        capture(messages)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    return _Conversation(thread_id, user_id, agent, messages)


def _read_conversations(path: Path, options: _Options) -> list[_Conversation]:
    """Parse the whole file first, so a bad line stops the run before anything is stored."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc
    if not text.strip():
        raise ValueError(f"{path} is empty: expected JSONL, one conversation per line")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    try:
        json.loads(lines[0][1])
    except json.JSONDecodeError:
        try:  # not JSONL: maybe one pretty-printed JSON conversation
            return [_conversation(json.loads(text), str(path), options)]
        except json.JSONDecodeError:
            pass  # report the first bad line below
    out = []
    for number, line in lines:
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        out.append(_conversation(data, f"{path}:{number}", options))
    return out


def _progress(items: list[_Conversation]) -> Iterator[_Conversation]:
    if sys.stderr.isatty() and len(items) > 1:
        with click.progressbar(items, label="ingesting", file=sys.stderr) as bar:
            yield from bar
    else:
        yield from items


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_obj
def ingest(options: _Options, file: Path) -> None:
    """Fold conversations from FILE into memory (JSONL: thread_id, user_id, agent, messages)."""
    conversations = _read_conversations(file, options)
    added = removed = updated = 0
    with options.memory() as mem:
        for conv in _progress(conversations):
            result = mem.update(
                conv.messages, thread_id=conv.thread_id, user_id=conv.user_id, agent=conv.agent
            )
            added += result.facts_added
            removed += result.facts_removed
            updated += result.count("summary_changed") + result.count("updated")
        extractor = mem.extractor_name
    click.echo(
        f"read {len(conversations)} conversations with the {extractor} extractor: "
        f"{added} facts added, {removed} removed, {updated} summaries/facts updated"
    )


# --- reading -----------------------------------------------------------------------------


@cli.command()
@click.option("--max-tokens", type=click.IntRange(min=50), help="Budget for the block.")
@click.option("--query", help="The user's message: inject the facts relevant to it first.")
@click.option("--explain", is_flag=True, help="What is included or dropped, and why (a table).")
@click.option("--json", "as_json", is_flag=True, help="With --explain: the report as JSON.")
@click.pass_obj
def context(
    options: _Options, max_tokens: int | None, query: str | None, explain: bool, as_json: bool
) -> None:
    """Print the memory block memfold would inject into the system prompt."""
    with options.memory() as mem:
        if explain or as_json:
            report = mem.explain_context(**options.scope, max_tokens=max_tokens, query=query)
            _audit_commands.print_report(report, as_json=as_json)
            return
        block = mem.context(**options.scope, max_tokens=max_tokens, query=query)
    click.echo(block if block else "(memory is empty)")


@cli.command()
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--category", help="Only facts of this category.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
@click.pass_obj
def search(options: _Options, query: str, limit: int, category: str | None, as_json: bool) -> None:
    """Search one scope's facts for QUERY (English, Chinese or both), best first."""
    with options.memory() as mem:
        hits = mem.search(query, **options.scope, limit=limit, category=category)
    if as_json:
        click.echo(json.dumps([hit.to_dict() for hit in hits], ensure_ascii=False, indent=2))
    elif not hits:
        click.echo("(no matching facts)")
    else:
        click.echo("\n".join(f"{_fact_line(hit.fact)}  (score {hit.score:.3f})" for hit in hits))


def _render_document(doc: MemoryDocument) -> str:
    lines = [f"revision {doc.revision}, generation {doc.generation}, {len(doc.facts)} facts"]
    for group, sections in (("User", USER_SECTIONS), ("History", HISTORY_SECTIONS)):
        filled = [(s, doc.summary(s)) for s in sections if doc.summary(s).strip()]
        if filled:
            lines.append(f"\n{group}:")
            lines.extend(f"  {_SECTION_TITLES[s]}: {text}" for s, text in filled)
    if doc.facts:
        lines.append("\nFacts:")
        lines.extend(_fact_line(f) for f in doc.facts)
    return "\n".join(lines)


def _fact_line(fact: Any) -> str:
    avoid = f" (avoid: {fact.source_error})" if fact.source_error else ""
    manual = " [manual]" if fact.is_manual else ""
    return f"  {fact.id}  [{fact.category} | {fact.confidence:.2f}] {fact.content}{avoid}{manual}"


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the stored JSON document.")
@click.pass_obj
def show(options: _Options, as_json: bool) -> None:
    """Show the stored memory of one user (and agent)."""
    with options.memory() as mem:
        if as_json:
            click.echo(json.dumps(mem.export(**options.scope), ensure_ascii=False, indent=2))
        else:
            click.echo(_render_document(mem.get(**options.scope)))


@cli.command()
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File to write."
)
@click.pass_obj
def export(options: _Options, output: Path | None) -> None:
    """Export one scope's memory as JSON."""
    with options.memory() as mem:
        text = json.dumps(mem.export(**options.scope), ensure_ascii=False, indent=2)
    if output is None:
        click.echo(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")


@cli.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_obj
def import_(options: _Options, file: Path) -> None:
    """Replace one scope's memory with FILE (memfold JSON or a v1 memory.json)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {file} as JSON: {exc}") from None
    with options.memory() as mem:
        doc = mem.import_document(data, **options.scope)
    click.echo(f"imported {len(doc.facts)} facts (revision {doc.revision})")


@cli.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def clear(options: _Options, yes: bool) -> None:
    """Forget everything in one scope."""
    if not yes:
        click.confirm("Forget this memory for good?", abort=True)
    with options.memory() as mem:
        mem.clear(**options.scope)
    click.echo("memory cleared")


@cli.command()
@click.pass_obj
def status(options: _Options) -> None:
    """Configuration (secrets masked) and queue counters of this process."""
    with options.memory() as mem:
        info = {"config": mem.config.masked(), "extractor": mem.extractor_name}
        info["queue"] = asdict(mem.status())
    click.echo(json.dumps(info, ensure_ascii=False, indent=2, default=str))


# --- facts -------------------------------------------------------------------------------


@cli.group()
def facts() -> None:
    """List, add, edit and remove facts."""


@facts.command(name="list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def facts_list(options: _Options, as_json: bool) -> None:
    """List facts, most confident first."""
    with options.memory() as mem:
        doc = mem.get(**options.scope)
    ordered = sorted(doc.facts, key=lambda f: (-f.confidence, f.created_at))
    if as_json:
        click.echo(json.dumps(_fact_dicts(ordered), ensure_ascii=False, indent=2))
    elif not ordered:
        click.echo("(no facts)")
    else:
        click.echo("\n".join(_fact_line(f) for f in ordered))


def _fact_dicts(facts_: list[Any]) -> list[dict[str, Any]]:
    return [
        {"id": f.id, "content": f.content, "category": f.category, "confidence": f.confidence,
         "source": f.source, "sourceError": f.source_error, "createdAt": f.created_at}
        for f in facts_
    ]  # fmt: skip


@facts.command(name="add")
@click.argument("content")
@click.option("--category", default="context", show_default=True)
@click.option("--confidence", type=click.FloatRange(0.0, 1.0), default=0.9, show_default=True)
@click.pass_obj
def facts_add(options: _Options, content: str, category: str, confidence: float) -> None:
    """Add a manual fact."""
    with options.memory() as mem:
        fact = mem.add_fact(content, category=category, confidence=confidence, **options.scope)
    click.echo(f"added {fact.id}")


@facts.command(name="edit")
@click.argument("fact_id")
@click.option("--content")
@click.option("--category")
@click.option("--confidence", type=click.FloatRange(0.0, 1.0))
@click.pass_obj
def facts_edit(
    options: _Options,
    fact_id: str,
    content: str | None,
    category: str | None,
    confidence: float | None,
) -> None:
    """Edit a fact's content, category or confidence."""
    if content is None and category is None and confidence is None:
        raise ValueError("nothing to change: pass --content, --category or --confidence")
    with options.memory() as mem:
        fact = mem.edit_fact(
            fact_id, content=content, category=category, confidence=confidence, **options.scope
        )
    click.echo(f"updated {fact.id}")


@facts.command(name="rm")
@click.argument("fact_id")
@click.pass_obj
def facts_rm(options: _Options, fact_id: str) -> None:
    """Remove a fact."""
    with options.memory() as mem:
        mem.delete_fact(fact_id, **options.scope)
    click.echo(f"removed {fact_id}")


# --- migrate -----------------------------------------------------------------------------


@cli.command()
@click.option("--to", "to", type=click.Choice(["sqlite", "postgres"]), required=True)
@click.option("--dsn", help="PostgreSQL connection string (default: `dsn` in the config).")
@click.option("--overwrite", is_flag=True, help="Replace target scopes that differ.")
@click.pass_obj
def migrate(options: _Options, to: str, dsn: str | None, overwrite: bool) -> None:
    """Copy every scope from the configured store into a SQLite or PostgreSQL store."""
    from memfold.migrate import migrate as copy_scopes
    from memfold.store.factory import open_store

    source_config = MemoryConfig.build(options.config, home=options.home)
    target_config = MemoryConfig.validated(
        {**source_config.model_dump(), "storage": to, "dsn": dsn or source_config.dsn}
    )
    if source_config.storage == to and (to == "sqlite" or target_config.dsn == source_config.dsn):
        raise ValueError(f"the configured store already is this {to} store: nothing to migrate")
    source = open_store(source_config)
    try:
        target = open_store(target_config)
        try:
            report = copy_scopes(source, target, overwrite=overwrite)
        finally:
            target.close()
    finally:
        source.close()
    click.echo(f"migrated to {to}: {report.summary()}")
    for scope, reason in report.failed:
        click.echo(f"memfold: failed {scope}: {reason}", err=True)
    if not report.ok:
        sys.exit(1)


# --- serve (the REST API and the web page) --------------------------------------------

cli.add_command(server_cli.serve)
cli.add_command(server_cli.api_key)

_audit_commands.register(cli, _Options)

# --- eval ---------------------------------------------------------------------------------

cli.add_command(eval_group)  # memfold eval extraction CORPUS.jsonl (memfold.eval.command)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``memfold`` command."""
    try:
        cli.main(args=argv, prog_name="memfold", standalone_mode=False)
    except click.exceptions.Abort:
        _fail("aborted")
    except click.ClickException as exc:
        _fail(exc.format_message())
    except (MemfoldError, ValueError, OSError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted")


if __name__ == "__main__":
    main()
