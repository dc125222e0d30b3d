"""Scripted model APIs on 127.0.0.1 for driving the real agent CLIs offline.

One server speaks the three wire formats the agents use besides Anthropic's
(tests/support/fake_anthropic.py):

- OpenAI Responses (Codex): ``POST …/responses``, SSE ``response.output_item.done`` items
  (``function_call``, ``custom_tool_call``, ``message``) and ``response.completed``; the
  agent sends tool results back as ``function_call_output`` / ``custom_tool_call_output``
  input items.
- OpenAI Chat Completions (Copilot CLI, OpenCode): ``POST …/chat/completions``, SSE
  ``chat.completion.chunk`` with ``delta.tool_calls``; results come back as ``role: tool``
  messages.
- Gemini (Gemini CLI): ``POST …/models/M:streamGenerateContent?alt=sse`` (and
  ``:generateContent``), ``functionCall`` parts; results come back as
  ``functionResponse`` parts.

A script is a list of turns; a turn is a list of :func:`say` and :func:`call` steps. The
server answers each request that offers tools (the agent's conversation) with the next
turn, and anything else (titles, summaries, routing) with a short text. Every request
body is recorded, so a test asserts on what the model was really told: the command's
output, or the hook's deny reason. Unknown paths get 404 and are listed in
``unexpected``, so a new CLI version that calls something new shows up in a failing
test's message instead of hanging.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


@dataclass(frozen=True)
class Step:
    """One output of a turn: text (``name`` empty) or a tool call."""

    text: str = ""
    name: str = ""
    args: dict[str, Any] | None = None
    raw: str | None = None  # a freeform (custom) tool's input, e.g. Codex's apply_patch
    call_id: str = field(default_factory=lambda: f"call_{next(_ids):05d}")


def say(text: str) -> Step:
    return Step(text=text)


def call(name: str, args: dict[str, Any] | None = None, *, raw: str | None = None) -> Step:
    return Step(name=name, args=args if raw is None else None, raw=raw)


Turn = list[Step]


@dataclass
class Recorded:
    method: str
    path: str
    body: dict[str, Any] | None


@dataclass
class FakeModel:
    script: list[Turn] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    port: int = 0
    _turn: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def next_turn(self) -> Turn:
        with self._lock:
            turn = self.script[self._turn] if self._turn < len(self.script) else [say("Done.")]
            self._turn += 1
            return turn

    @property
    def turns_served(self) -> int:
        return self._turn

    def conversation(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.body is not None and _offers_tools(r.body)]

    def tool_results(self) -> list[str]:
        """Every tool result the agent sent back, once per call id, in order."""
        seen: dict[str, str] = {}
        for body in self.conversation():
            for call_id, text in _results_in(body):
                seen.setdefault(call_id, text)
        return list(seen.values())

    def report(self) -> str:
        lines = [f"{r.method} {r.path} tools={bool(r.body and _offers_tools(r.body))}" for r in self.requests]
        lines += [f"unexpected: {u}" for u in self.unexpected]
        lines += [f"tool result: {t[:2000]!r}" for t in self.tool_results()]
        return "\n".join(lines)


def _offers_tools(body: dict[str, Any]) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and bool(tools)


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text_of(v) for v in value)
    if isinstance(value, dict):
        for key in ("text", "output", "content", "result", "error", "llmContent"):
            if key in value:
                return _text_of(value[key])
        return json.dumps(value)
    return "" if value is None else str(value)


def _results_in(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    # Responses: input items.
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
            yield str(item.get("call_id")), _text_of(item.get("output"))
    # Chat Completions: role tool messages.
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "tool":
            yield str(message.get("tool_call_id")), _text_of(message.get("content"))
    # Gemini: functionResponse parts.
    for n, content in enumerate(body.get("contents") or []):
        for m, part in enumerate(content.get("parts") or [] if isinstance(content, dict) else []):
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                yield str(response.get("id") or f"{n}.{m}"), _text_of(response.get("response"))


# ------------------------------------------------------------------ the wire formats


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def responses_stream(turn: Turn, model: str) -> bytes:
    rid = f"resp_{next(_ids):06d}"
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("response.created", {"type": "response.created", "response": {"id": rid}})
    ]
    for i, step in enumerate(turn):
        if not step.name:
            item: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{next(_ids):06d}",
                "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
        elif step.raw is not None:
            item = {
                "type": "custom_tool_call",
                "id": f"ctc_{next(_ids):06d}",
                "status": "completed",
                "call_id": step.call_id,
                "name": step.name,
                "input": step.raw,
            }
        else:
            item = {
                "type": "function_call",
                "id": f"fc_{next(_ids):06d}",
                "status": "completed",
                "call_id": step.call_id,
                "name": step.name,
                "arguments": json.dumps(step.args or {}),
            }
        events.append(
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": i, "item": item},
            )
        )
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": i, "item": item},
            )
        )
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 10,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 20,
    }
    events.append(
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {
                    "id": rid,
                    "object": "response",
                    "model": model,
                    "status": "completed",
                    "usage": usage,
                },
            },
        )
    )
    return _sse(events)


def chat_stream(turn: Turn, model: str) -> bytes:
    cid = f"chatcmpl-{next(_ids):06d}"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, chunk({"role": "assistant", "content": ""}))
    ]
    calls = [s for s in turn if s.name]
    for step in turn:
        if not step.name:
            events.append((None, chunk({"content": step.text})))
    for index, step in enumerate(calls):
        arguments = step.raw if step.raw is not None else json.dumps(step.args or {})
        events.append(
            (
                None,
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": step.call_id,
                                "type": "function",
                                "function": {"name": step.name, "arguments": arguments},
                            }
                        ]
                    }
                ),
            )
        )
    final = chunk({}, "tool_calls" if calls else "stop")
    final["usage"] = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
    events.append((None, final))
    events.append((None, "[DONE]"))
    return _sse(events)


def chat_message(turn: Turn, model: str) -> dict[str, Any]:
    calls = [s for s in turn if s.name]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(s.text for s in turn if not s.name) or None,
    }
    if calls:
        message["tool_calls"] = [
            {
                "id": s.call_id,
                "type": "function",
                "function": {
                    "name": s.name,
                    "arguments": s.raw if s.raw is not None else json.dumps(s.args or {}),
                },
            }
            for s in calls
        ]
    return {
        "id": f"chatcmpl-{next(_ids):06d}",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def gemini_response(turn: Turn) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for step in turn:
        if step.name:
            parts.append({"functionCall": {"name": step.name, "args": step.args or {}, "id": step.call_id}})
        else:
            parts.append({"text": step.text})
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20},
        "modelVersion": "gemini-2.5-pro",
    }


def _handler(state: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def do_HEAD(self) -> None:
            state.requests.append(Recorded("HEAD", self.path, None))
            self._send(200, b"")

        def do_GET(self) -> None:
            state.requests.append(Recorded("GET", self.path, None))
            path = self.path.split("?", 1)[0]
            if path.endswith("/models"):
                self._send(
                    200,
                    json.dumps(
                        {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
                    ).encode(),
                )
                return
            state.unexpected.append(f"GET {self.path}")
            self._send(404, b'{"error":{"message":"not in the fake"}}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode(errors="replace")}
            state.requests.append(Recorded("POST", self.path, body))
            path = self.path.split("?", 1)[0]
            conversation = _offers_tools(body) or bool(body.get("tools") and body["tools"][0])
            model = str(body.get("model") or "fake-model")
            if path.endswith("/responses"):
                turn = state.next_turn() if conversation else [say("OK")]
                self._send(200, responses_stream(turn, model), "text/event-stream")
            elif path.endswith("/chat/completions"):
                turn = state.next_turn() if conversation else [say("OK")]
                if body.get("stream"):
                    self._send(200, chat_stream(turn, model), "text/event-stream")
                else:
                    self._send(200, json.dumps(chat_message(turn, model)).encode())
            elif ":streamGenerateContent" in path or ":generateContent" in path:
                turn = state.next_turn() if conversation else [say("OK")]
                answer = gemini_response(turn)
                if ":streamGenerateContent" in path:
                    self._send(200, _sse([(None, answer)]), "text/event-stream")
                else:
                    self._send(200, json.dumps(answer).encode())
            elif ":countTokens" in path:
                self._send(200, b'{"totalTokens": 10}')
            else:
                state.unexpected.append(f"POST {self.path}")
                self._send(404, b'{"error":{"message":"not in the fake"}}')

    return Handler


@contextmanager
def fake_model(script: list[Turn] | None = None) -> Iterator[FakeModel]:
    state = FakeModel(script=list(script or []))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="fake-model", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


__all__ = ["FakeModel", "Step", "call", "fake_model", "say"]
