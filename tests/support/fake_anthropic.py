"""A scripted Anthropic Messages API on 127.0.0.1, for driving the real Claude Code CLI offline.

Claude Code pointed at it with `ANTHROPIC_BASE_URL` sends `HEAD /` (a reachability probe) and
`POST /v1/messages` with `"stream": true`. The server answers each conversation turn from a
script the test writes — a tool_use block first, then text once the tool_result has come
back — and records every request body, so a test asserts on what the model was really
told: the command's output, or the hook's deny reason.

Requests that are not the scripted conversation (title or topic generation with a small
model, quota probes: anything that does not offer the `Bash` tool) get a short generic text.
Unknown paths get 404 and are logged in `unexpected`, so a new Claude Code version that
calls something new shows up in a failing test's message instead of hanging.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]
Turn = list[Block]
# A script is the list of the assistant's turns, or a function of the request body that
# returns the next turn (for answers that depend on what the model was sent).
Script = list[Turn] | Callable[[dict[str, Any]], Turn]

_ids = itertools.count(1)


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool_use(name: str, tool_input: dict[str, Any], tool_id: str | None = None) -> Block:
    return {"type": "tool_use", "id": tool_id or f"toolu_{next(_ids):04d}", "name": name, "input": tool_input}


def bash(command: str, description: str = "run a command") -> Block:
    return tool_use("Bash", {"command": command, "description": description})


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


@dataclass
class FakeAnthropic:
    """The server's state: the script, and everything it was sent."""

    script: Script = field(default_factory=list)
    model: str = "claude-sonnet-4-5"
    requests: list[Recorded] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    port: int = 0
    host: str = "127.0.0.1"  # the name (or address) Claude Code is pointed at
    _turn: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def conversation(self) -> list[dict[str, Any]]:
        """The bodies of the scripted conversation's requests (the ones that offer Bash)."""
        return [r.body for r in self.requests if r.body is not None and is_conversation(r.body)]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block the model was sent, once each, in order."""
        seen: dict[str, dict[str, Any]] = {}
        for body in self.conversation:
            for message in body.get("messages", []):
                content = message.get("content")
                if message.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        seen.setdefault(str(block.get("tool_use_id")), block)
        return list(seen.values())

    def tool_result_texts(self) -> list[str]:
        return [result_text(b) for b in self.tool_results()]

    def report(self) -> str:
        """What the server saw, for a failing assertion's message."""
        lines = [
            f"{r.method} {r.path} conversation={bool(r.body and is_conversation(r.body))}"
            for r in self.requests
        ]
        lines += [f"unexpected: {u}" for u in self.unexpected]
        lines += [f"tool_result: {t!r}" for t in self.tool_result_texts()]
        return "\n".join(lines)

    def next_turn(self, body: dict[str, Any]) -> Turn:
        with self._lock:
            if callable(self.script):
                return self.script(body)
            turn = self.script[self._turn] if self._turn < len(self.script) else [text("Done.")]
            self._turn += 1
            return turn


def is_conversation(body: dict[str, Any]) -> bool:
    tools = body.get("tools") or []
    # claude-code-acp offers its Bash as an MCP tool of its own (mcp__acp__Bash).
    return any(isinstance(t, dict) and t.get("name") in ("Bash", "mcp__acp__Bash") for t in tools)


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


def _message(model: str, turn: Turn) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in turn) else "end_turn"
    return {
        "id": f"msg_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": turn,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def _sse(model: str, turn: Turn) -> bytes:
    """The turn as the Messages API streams it: message_start, one start/delta/stop per block,
    message_delta with the stop reason, message_stop."""
    message = _message(model, turn)
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}},
        )
    ]
    for i, block in enumerate(turn):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 10},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def _handler(state: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the record is `requests`
            return

        def _record(self, body: dict[str, Any] | None) -> None:
            state.requests.append(Recorded(self.command, self.path, dict(self.headers.items()), body))

        def _send(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def do_HEAD(self) -> None:
            self._record(None)
            self._send(200, b"")

        def do_GET(self) -> None:
            self._record(None)
            state.unexpected.append(f"GET {self.path}")
            self._send(404, b'{"type":"error","error":{"type":"not_found_error","message":"fake"}}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode(errors="replace")}
            self._record(body)
            path = self.path.split("?", 1)[0]
            if path == "/v1/messages/count_tokens":
                self._send(200, b'{"input_tokens": 10}')
                return
            if path != "/v1/messages":
                state.unexpected.append(f"POST {self.path}")
                self._send(404, b'{"type":"error","error":{"type":"not_found_error","message":"fake"}}')
                return
            turn = state.next_turn(body) if is_conversation(body) else [text("OK")]
            model = str(body.get("model") or state.model)
            if body.get("stream"):
                self._send(200, _sse(model, turn), "text/event-stream")
            else:
                self._send(200, json.dumps(_message(model, turn)).encode())

    return Handler


@contextmanager
def fake_anthropic(
    script: Script | None = None,
    *,
    bind: tuple[str, int] = ("127.0.0.1", 0),
    host: str = "",
    make: Callable[[Callable[[], ThreadingHTTPServer]], ThreadingHTTPServer] | None = None,
) -> Iterator[FakeAnthropic]:
    """``bind``: where it listens; ``host``: the name Claude Code is given (default: the
    address); ``make``: how its socket is made (in a network namespace: support/netns.py)."""
    state = FakeAnthropic(script=script if script is not None else [], host=host or bind[0])

    def create() -> ThreadingHTTPServer:
        return ThreadingHTTPServer(bind, _handler(state))

    server = make(create) if make is not None else create()
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="fake-anthropic", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


__all__ = ["FakeAnthropic", "bash", "fake_anthropic", "result_text", "text", "tool_use"]
