"""``memfold mcp``: the MCP server on stdio, for an MCP client to start.

Importing this module needs only click; the MCP SDK is imported when the command runs,
so the rest of the CLI works without the ``mcp`` extra.
"""

from __future__ import annotations

import logging
import sys

import click

from memfold.cli._app import Options, scope_options
from memfold.config import MemoryConfig
from memfold.mcp.binding import Binding

__all__ = ["mcp_command", "stdio_config"]

logger = logging.getLogger("memfold.mcp")

#: The durable queue beside each store, for a ``queue`` the configuration leaves unset.
_DURABLE_QUEUE = {"json": "sqlite", "sqlite": "sqlite", "postgres": "postgres"}


def stdio_config(config: MemoryConfig) -> MemoryConfig:
    """``config`` for a stdio server: a durable queue unless ``queue`` is set.

    An MCP client ends its server a few seconds after closing stdin (SIGTERM, then
    SIGKILL), often before an update extracted by an LLM has finished; with the
    in-process queue that conversation would be lost. A durable queue keeps it, and the
    next ``memfold mcp`` (or any durable-queue process on the same store) learns it.
    """
    durable = _DURABLE_QUEUE.get(config.storage)
    if "queue" in config.model_fields_set or durable is None:
        return config
    logger.info("memfold mcp: queue=%s (durable; set `queue` to choose)", durable)
    return MemoryConfig.validated({**config.model_dump(), "queue": durable})


@click.command(name="mcp")
@scope_options
@click.pass_obj
def mcp_command(options: Options) -> None:
    """Serve one user's memory to an MCP client over stdio.

    The user and agent are --user/--agent, else `mcp.user_id` and `mcp.agent` in the
    config. Point Claude Desktop, Cursor or any MCP client at `memfold --home
    ~/.memfold --user alice mcp`; logs go to stderr.
    """
    from memfold.mcp import require_sdk

    require_sdk()
    from memfold.mcp.stdio import serve_stdio
    from memfold.memory import Memory

    config = stdio_config(options.settings())
    binding = Binding(
        options.user if options.user is not None else config.mcp.user_id,
        options.agent if options.agent is not None else config.mcp.agent,
    )
    # workers run: conversations handed over are learnt while the session goes on
    memory = Memory(config)
    try:  # bad ids or an unreadable store stop the server now, in one line on stderr
        memory.get(user_id=binding.user_id, agent=binding.agent)
    except BaseException:
        memory.close()
        raise
    if not serve_stdio(memory, binding):
        sys.exit(1)
