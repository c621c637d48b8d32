"""``memfold search QUERY``: one scope's facts that match, best first (issue 17)."""

from __future__ import annotations

import click

from memfold.cli._app import Options, cli, scope_options
from memfold.cli._output import echo_json, emit, fact_lines, note
from memfold.cli._read import explain_missing

__all__ = ["search"]


@cli.command()
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--category", help="Only facts of this category.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
@scope_options
@click.pass_obj
def search(options: Options, query: str, limit: int, category: str | None, as_json: bool) -> None:
    """Search one scope's facts for QUERY (English, Chinese or both), best first."""
    with options.opened() as mem:
        hits = mem.search(query, **options.scope, limit=limit, category=category)
        if not hits and not explain_missing(mem, options, mem.get(**options.scope)):
            note(f"no matching facts for {options.who()}")
    if as_json:
        echo_json([hit.to_dict() for hit in hits])
        return
    lines = []
    for hit in hits:
        first, *rest = fact_lines(hit.fact)
        lines += [f"{first}  (score {hit.score:.3f})", *rest]
    if lines:
        emit(lines)
