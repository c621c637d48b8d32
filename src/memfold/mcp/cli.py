"""``memfold mcp``: the MCP server on stdio, for an MCP client to start.

Importing this module needs only click; the MCP SDK is imported when the command runs,
so the rest of the CLI works without the ``mcp`` extra.
"""

from __future__ import annotations

import sys

import click

from memfold.config import MemoryConfig
from memfold.mcp.binding import Binding

__all__ = ["mcp_command"]


@click.command(name="mcp")
@click.pass_context
def mcp_command(ctx: click.Context) -> None:
    """Serve one user's memory to an MCP client over stdio.

    The user and agent are --user/--agent (before the command), else `mcp.user_id` and
    `mcp.agent` in the config. Point Claude Desktop, Cursor or any MCP client at
    `memfold --home ~/.memfold --user alice mcp`; logs go to stderr.
    """
    from memfold.mcp import require_sdk

    require_sdk()
    from memfold.mcp.stdio import serve_stdio
    from memfold.memory import Memory

    options = ctx.obj
    config = MemoryConfig.build(options.config, home=options.home)
    binding = Binding(
        options.user if options.user is not None else config.mcp.user_id,
        options.agent if options.agent is not None else config.mcp.agent,
    )
    # start_workers: conversations handed over are learnt while the session runs
    if not serve_stdio(Memory(config), binding):
        sys.exit(1)
