"""The ``memfold`` command line: a thin shell over :class:`memfold.Memory`.

Exit status: 0 ok; 1 a check failed or the operation could not complete (conflicts, a
refused or unconfirmed import, the store or the LLM failing); 2 a usage or input error.
Every error is one line on stderr, never a traceback.

Adding a command: write it in a module of this package with ``@cli.command()`` (or on a
group), add ``@scope_options`` so ``--user``/``--agent``/``--home``/``--config`` work after
it too, read the scope from the ``Options`` object (``@click.pass_obj``), open memory
with ``options.opened()``, and import the module below. Keep heavy imports inside the
command function: ``memfold --help`` loads every module here. A command that lives
elsewhere and imports more at module level is registered with ``cli.add_lazy(name,
"module:attribute", short_help)`` and imported only when it runs.
"""

from memfold.cli import _admin, _facts, _ingest, _read, _search  # noqa: F401 (they register commands)
from memfold.cli._app import CheckFailed, Options, cli, main, scope_options

# Commands that import more than click at module level load only when they run.
cli.add_lazy("eval", "memfold.eval.command:eval_group", "Measure memfold on labelled data.")
cli.add_lazy(
    "history",
    "memfold.cli._audit:history",
    "Changes to one scope's memory, newest first (or those of FACT_ID).",
)
cli.add_lazy(
    "why", "memfold.cli._audit:why", "Where FACT_ID came from, what changed it, what replaced it."
)
cli.add_lazy(
    "summary",
    "memfold.cli._audit:summary",
    "Show, edit or clear the summary sections (work, personal, focus, …).",
)
cli.add_lazy("serve", "memfold.server.cli:serve", "Serve the REST API and the memory web page.")
cli.add_lazy("api-key", "memfold.server.cli:api_key", "Make an API key for memfold serve.")
cli.add_lazy("forget-user", "memfold.cli._audit:forget_user",
             "Erase USER everywhere: every agent's memory, history, queued updates.")  # fmt: skip

__all__ = ["CheckFailed", "Options", "cli", "main", "scope_options"]
