"""A pending request's words, as every view of it shows them (console/contract/tool_words.py).

``Write .env (+12 −3)`` for a file tool, ``server.tool(args)`` for an MCP tool, the
command line for everything else; the queue, the detail and ``agent-console pending``
take it from here.
"""

from __future__ import annotations

import base64
import binascii

from console.contract.tool_words import mcp_name, tool_words
from console.protocol.pending import PendingItem


def request_words(item: PendingItem) -> str | None:
    """The request in its tool's words, or None for a command."""
    op = item.operation
    stdin = b""
    if op.stdin and mcp_name(op.tool) is not None:
        try:
            stdin = base64.b64decode(op.stdin[: 4 << 20], validate=True)
        except (binascii.Error, ValueError):
            stdin = b""
    change = item.proposed
    return tool_words(
        op.tool,
        op.argv,
        workspace_root=op.workspace_root,
        justification=op.justification,
        stdin=stdin,
        diff=change.diff if change is not None else None,
        new_file=change.new_file if change is not None else False,
    )


def shown_command(item: PendingItem) -> str:
    """What a one-line view of the request shows: its words, else its command line."""
    return request_words(item) or item.command
