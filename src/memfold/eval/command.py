"""``memfold eval extraction CORPUS.jsonl``: the CLI face of the evaluation.

Registered on the ``memfold`` command group; it only reads arguments, runs
:func:`memfold.eval.evaluate` and prints the report. Exit status 1 when a threshold
given with ``--min-recall``, ``--min-precision`` or ``--max-invented`` is not met (for CI).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from memfold.config import MemoryConfig
from memfold.eval.corpus import load_corpus
from memfold.eval.report import evaluation_to_dict, format_evaluation
from memfold.eval.run import evaluate

__all__ = ["eval_group"]


@click.group(name="eval")
def eval_group() -> None:
    """Measure memfold on labelled data."""


@eval_group.command(name="extraction")
@click.argument("corpus", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--extractor",
    type=click.Choice(["rules", "llm"]),
    help="Extractor to score (default: what the config chooses).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False),
    help="YAML config (the llm section for --extractor llm, rule_pattern_files, …).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=50,
    show_default=True,
    help="Lines shown per list (misses, invented, …).",
)
@click.option("--min-recall", type=click.FloatRange(0.0, 1.0), help="Exit 1 below this recall.")
@click.option(
    "--min-precision", type=click.FloatRange(0.0, 1.0), help="Exit 1 below this precision."
)
@click.option("--max-invented", type=click.IntRange(min=0), help="Exit 1 above this many.")
@click.pass_context
def extraction(  # noqa: PLR0917 (click passes each option)
    ctx: click.Context,
    corpus: Path,
    extractor: str | None,
    config_file: str | None,
    as_json: bool,
    limit: int,
    min_recall: float | None,
    min_precision: float | None,
    max_invented: int | None,
) -> None:
    """Score an extractor on a labelled corpus: recall, precision, invented facts.

    CORPUS is a JSON-lines file, one labelled conversation per line (format: README,
    "Measuring extraction quality"). Each conversation is extracted into an in-memory
    store, so nothing is written.
    """
    source = config_file or getattr(ctx.obj, "config", None)
    config = MemoryConfig.build(source)
    if extractor == "llm" and config.llm is None:
        raise ValueError(
            "--extractor llm needs a model: pass --config FILE with an llm section "
            "{provider: openai, model, base_url, api_key_env} (any OpenAI-compatible endpoint)"
        )
    if extractor:
        config = MemoryConfig.validated({**config.model_dump(), "extractor": extractor})
    evaluation = evaluate(load_corpus(corpus), config)
    if as_json:
        click.echo(json.dumps(evaluation_to_dict(evaluation), ensure_ascii=False, indent=2))
    else:
        click.echo(format_evaluation(evaluation, corpus=str(corpus), limit=limit), nl=False)
    overall = evaluation.report.overall
    unmet = [
        f"{name} {value:.2f} {relation} {bound}"
        for name, value, relation, bound, ok in (
            ("recall", overall.recall or 0.0, "<", min_recall, min_recall is None
             or (overall.recall or 0.0) >= min_recall),
            ("precision", overall.precision or 0.0, "<", min_precision, min_precision is None
             or (overall.precision or 0.0) >= min_precision),
            ("invented", float(overall.invented), ">", max_invented, max_invented is None
             or overall.invented <= max_invented),
        )
        if not ok
    ]  # fmt: skip
    if unmet:
        click.echo(f"memfold: extraction quality below target: {'; '.join(unmet)}", err=True)
        sys.exit(1)
