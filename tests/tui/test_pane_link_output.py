"""A pane's link feeds its screen only output it can read, in order, with no gap.

A scripted peer on a real socket plays the daemon: it answers the attach, then streams
``session.output``. Output that is not base64 ends the connection at once (nothing after
it is fed, so the pane never shows a screen with a hole in it) and the pane re-attaches.
"""

from __future__ import annotations

import asyncio
import base64
import json

from support.daemon import short_tmp

from console.client import AsyncClient
from console.protocol import jsonrpc
from console.tui.panes.pane_link import CONNECTING, LIVE, PaneLink


def _output(offset: int, data_base64: str) -> bytes:
    params = {"session": "s1", "offset": offset, "data_base64": data_base64}
    return jsonrpc.encode(jsonrpc.notification("session.output", params))  # type: ignore[arg-type]


async def _pane_against(stream: list[bytes]) -> PaneLink:
    """A link attached to a peer that streams ``stream`` after answering the attach."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            request = json.loads(line)
            if request["method"] == "sessions.attach":
                result = {"session": "s1", "offset": 0, "cols": 20, "rows": 4, "snapshot_base64": ""}
                writer.write(jsonrpc.encode(jsonrpc.response(request["id"], result)))
                writer.write(b"".join(stream))
            else:
                writer.write(
                    jsonrpc.encode(jsonrpc.error_response(request["id"], jsonrpc.RPCError(-32601, "no")))
                )
            await writer.drain()

    path = short_tmp() / "pane.sock"
    server = await asyncio.start_unix_server(serve, path=str(path))

    async def connect() -> AsyncClient:
        reader, writer = await asyncio.open_unix_connection(str(path))
        return AsyncClient(reader, writer, "operator")

    link = PaneLink("s1", connect, read_only=True)
    link.server = server  # type: ignore[attr-defined]  # closed by the test
    return link


async def test_output_that_is_not_base64_ends_the_stream_before_anything_after_it():
    good = base64.b64encode(b"first").decode()
    after = base64.b64encode(b"after").decode()
    link = await _pane_against([_output(0, good), _output(5, "not base64!"), _output(16, after)])
    task = asyncio.create_task(link.run())
    try:
        for _ in range(500):
            if link.screen is not None and link.state == CONNECTING:
                break
            await asyncio.sleep(0.01)
        assert link.state == CONNECTING  # dropped the stream, re-attaching
        assert "unreadable" in link.message
        assert link.screen is not None
        text = link.screen.text()
        assert "first" in text and "after" not in text
        assert link.offset == 5
    finally:
        await link.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        link.server.close()  # type: ignore[attr-defined]


async def test_readable_output_is_fed_in_order():
    chunks = [b"one ", b"two ", b"three"]
    stream, offset = [], 0
    for chunk in chunks:
        stream.append(_output(offset, base64.b64encode(chunk).decode()))
        offset += len(chunk)
    link = await _pane_against(stream)
    task = asyncio.create_task(link.run())
    try:
        for _ in range(500):
            if link.offset == offset:
                break
            await asyncio.sleep(0.01)
        assert link.state == LIVE
        assert link.screen is not None and "one two three" in link.screen.text()
    finally:
        await link.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        link.server.close()  # type: ignore[attr-defined]
