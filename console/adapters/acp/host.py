"""Hosting an ACP agent: the console is its client, so every permission, file and terminal
goes through the daemon.

The Agent Client Protocol is JSON-RPC 2.0 over the agent's stdin and stdout, one message
a line. The host starts the agent (``agent-console run --acp -- AGENT ARGV``), says
``initialize`` offering the file system and terminals, opens a session in the workspace
and sends the person's prompts. Then it answers what the agent asks of its client:

- ``session/request_permission`` becomes a request in the one inbox: a command
  (``kind: execute``) as a sandboxed shell request held behind a ticket, an edit with a
  diff as a write request carrying the new content (the operator sees the daemon's diff),
  anything else as a request shaped like an MCP call (``unrestricted``, its whole input
  shown). The operator answers once, for the session or always, in the console: those
  grants live in the daemon, so the agent is only ever told ``allow_once`` or
  ``reject_once``, with the reason.
- ``terminal/create`` runs the command in the daemon's sandbox: by the ticket its
  permission was held behind (exactly what was approved), else as a new sandboxed request
  the policy decides; ``terminal/output``, ``wait_for_exit``, ``kill`` and ``release``
  follow that run.
- ``fs/write_text_file`` is a write request (the protected set and the operator decide;
  a write the operator already approved with this exact content is not asked twice); the
  host writes the file only when allowed. ``fs/read_text_file`` is refused for
  agent-console's state, the secret set and ``/proc`` (the hooks' read checks), else read.

Everything is recorded in the daemon's history as the agent identity of this host, the
ACP session id as each request's session. Nothing the host cannot map is allowed: an
unknown request is a JSON-RPC error, a permission the daemon cannot be asked is a reject.
The host is a client process of the daemon like a hook; how the agent itself is started
is its ``spawn`` (a plain child by default), so a confined launch of the agent, with its
stdio as pipes, plugs in without changing the rest.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.adapters import calls
from console.adapters.calls import Refused

if TYPE_CHECKING:
    from console.client.asyncclient import AsyncClient

AGENT = "acp"
PROTOCOL_VERSION = 1
MAX_LINE = 16 * 1024 * 1024
DEFAULT_OUTPUT_LIMIT = 1 << 20
# How long a permission may wait for the operator (the daemon's approval_timeout_s also bounds it).
PERMISSION_WAIT_S = 3600.0


class ACPError(Exception):
    """A JSON-RPC error to answer the agent with."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Terminal:
    command: str
    task: asyncio.Task[None] | None = None
    output: bytearray = field(default_factory=bytearray)
    limit: int = DEFAULT_OUTPUT_LIMIT
    truncated: bool = False
    exit_code: int | None = None
    signal: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, data: bytes) -> None:
        self.output += data
        if len(self.output) > self.limit:
            del self.output[: len(self.output) - self.limit]
            self.truncated = True


@dataclass
class ToolCall:
    """What the agent told about a tool call before asking for permission."""

    kind: str = "other"
    title: str = ""
    raw_input: Any = None
    content: list[Any] = field(default_factory=list)


class Host:
    """One hosted agent: its stdio, its sessions, its terminals, and the daemon."""

    def __init__(
        self,
        argv: list[str],
        workspace: str,
        *,
        state_dir: str | None,
        say: Callable[[str], None] | None = None,
        env: dict[str, str] | None = None,
        spawn: Spawn | None = None,
    ) -> None:
        """``spawn`` starts the agent with its stdin and stdout as pipes (default: a plain
        child process); a confined launch (the agent in the daemon's sandbox) passes its own."""
        self.argv = argv
        self.workspace = workspace
        self.state_dir = state_dir
        self.say = say or _print
        self.env = env
        self.spawn = spawn or _spawn
        self.proc: asyncio.subprocess.Process | None = None
        self._ids = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._tool_calls: dict[str, ToolCall] = {}
        self._terminals: dict[str, Terminal] = {}
        self._held: dict[str, str] = {}  # command -> ticket id, from an allowed permission
        self._approved_writes: set[tuple[str, str]] = set()  # (path, sha256) allowed by a permission
        self._identity: dict[str, str] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.session_id = ""

    # ------------------------------------------------------------------ the daemon

    async def _daemon(self) -> AsyncClient:
        """A new connection acting as this host's one agent identity (the first makes it)."""
        from console.client import AsyncClient

        client = await AsyncClient.connect(
            self.state_dir, role="agent", client="acp-host", identity=self._identity
        )
        if self._identity is None:
            agent = client.hello["agent"]
            self._identity = {"agent_id": agent["id"], "agent_secret": agent["secret"]}
        return client

    async def _ask(self, operation: dict[str, Any]) -> tuple[bool, str, str | None]:
        """(allowed, reason, ticket) for ``operation`` (shell operations are held)."""
        from console.adapters.gate import answer_of
        from console.client import DaemonUnreachable, RPCError
        from console.protocol.requests import OperationHold, OperationSubmit
        from console.protocol.results import OperationDecision

        answer: OperationDecision
        try:
            client = await self._daemon()
            async with client:
                if operation["kind"] == "shell":
                    held = await client.request(
                        OperationHold(operation=operation, timeout_s=PERMISSION_WAIT_S)
                    )
                    answer, command, ticket = held.decision, held.command, held.ticket
                else:
                    answer = await client.request(
                        OperationSubmit(operation=operation, timeout_s=PERMISSION_WAIT_S)
                    )
                    command = ticket = None
        except DaemonUnreachable as exc:
            return False, f"agent-console is unreachable, so nothing is allowed: {exc}", None
        except RPCError as exc:
            # A decision this client could not read (ResultError) is refused here too.
            return False, f"agent-console refused the request: {calls.one_line(exc.message)}", None
        verdict = answer_of(
            allow=answer.verdict == "allow",
            source=answer.source,
            reason=answer.reason,
            note=answer.note,
            command=command,
            operation=operation,
        )
        return verdict.allow, verdict.reason, ticket if verdict.allow else None

    # ------------------------------------------------------------------ the agent's stdio

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self._ids += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[self._ids] = fut
        await self._send({"id": self._ids, "method": method, "params": params})
        return await fut

    async def _read(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not the protocol (a stray log line): ignored, never acted on
            if not isinstance(msg, dict):
                continue
            if "method" in msg:
                task = asyncio.create_task(self._incoming(msg))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif isinstance(msg.get("id"), int) and msg["id"] in self._waiting:
                fut = self._waiting.pop(msg["id"])
                if "error" in msg:
                    fut.set_exception(ACPError(-32603, str(msg["error"])))
                else:
                    fut.set_result(msg.get("result"))
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_exception(ACPError(-32603, "the agent exited"))

    async def _incoming(self, msg: dict[str, Any]) -> None:
        method, params = str(msg["method"]), msg.get("params") or {}
        handler = HANDLERS.get(method)
        if "id" not in msg:  # a notification
            if handler is not None:
                with contextlib.suppress(Exception):
                    await handler(self, params)
            return
        try:
            if handler is None:
                raise ACPError(-32601, f"agent-console does not offer {method}")
            result = await handler(self, params)
        except ACPError as exc:
            await self._send({"id": msg["id"], "error": {"code": exc.code, "message": exc.message}})
            return
        except Exception as exc:  # a bug here is a refusal, never an allow
            await self._send(
                {"id": msg["id"], "error": {"code": -32603, "message": f"agent-console: {exc!r}"}}
            )
            return
        await self._send({"id": msg["id"], "result": result})

    # ------------------------------------------------------------------ handlers

    async def session_update(self, params: dict[str, Any]) -> None:
        update = params.get("update") or {}
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            content = update.get("content") or {}
            if content.get("type") == "text":
                self.say(str(content.get("text", "")))
        elif kind in ("tool_call", "tool_call_update"):
            call_id = str(update.get("toolCallId", ""))
            known = self._tool_calls.setdefault(call_id, ToolCall())
            if update.get("kind"):
                known.kind = str(update["kind"])
            if update.get("title"):
                known.title = str(update["title"])
            if update.get("rawInput"):
                known.raw_input = update["rawInput"]
            if isinstance(update.get("content"), list) and update["content"]:
                known.content = update["content"]

    def _operation_for(self, session: str, call: ToolCall) -> dict[str, Any]:
        where = {"agent": AGENT, "cwd": self.workspace, "project": self.workspace, "session": session}
        raw = call.raw_input if isinstance(call.raw_input, dict) else {}
        diffs = [c for c in call.content if isinstance(c, dict) and c.get("type") == "diff"]
        if call.kind == "execute" and isinstance(raw.get("command"), str):
            return calls.shell_operation(
                agent=AGENT,
                tool="execute",
                command=raw["command"],
                justification=call.title,
                cwd=self.workspace,
                project=self.workspace,
                session=session,
            )
        if diffs and isinstance(diffs[0].get("path"), str) and isinstance(diffs[0].get("newText"), str):
            diff = diffs[0]
            return calls.write_operation(
                tool="edit",
                path=diff["path"],
                content=diff["newText"].encode("utf-8", "surrogatepass"),
                state_dir=self.state_dir,
                **where,
            )
        return calls.mcp_operation(
            tool=call.kind or "other",
            server="acp agent",
            name=call.title or call.kind,
            tool_input=call.raw_input if call.raw_input is not None else {},
            **where,
        )

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        tool = params.get("toolCall") or {}
        call = self._tool_calls.get(str(tool.get("toolCallId", "")), ToolCall())
        content = tool.get("content")
        call = ToolCall(
            kind=str(tool.get("kind") or call.kind),
            title=str(tool.get("title") or call.title),
            raw_input=tool.get("rawInput") if tool.get("rawInput") is not None else call.raw_input,
            content=content if isinstance(content, list) and content else call.content,
        )
        session = str(params.get("sessionId", ""))
        try:
            operation = self._operation_for(session, call)
        except Refused as exc:
            return _choose(options, False, f"denied by agent-console: {exc}")
        allowed, reason, ticket = await self._ask(operation)
        if allowed and ticket and operation["kind"] == "shell":
            self._held[operation["args"][1]] = ticket
        if allowed and operation["kind"] == "process" and len(operation["args"]) == 2:
            self._approved_writes.add((operation["args"][0], operation["args"][1]))
        return _choose(options, allowed, reason)

    async def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        from console.adapters.claude_code.reads import check_read

        path = params.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ACPError(-32602, "fs/read_text_file: path must be absolute")
        try:
            check_read("Read", {"file_path": path}, self.workspace, dict(os.environ), self.state_dir)
        except Refused as exc:
            raise ACPError(-32002, f"denied by agent-console: {exc}") from None
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read(MAX_LINE)
        except OSError as exc:
            raise ACPError(-32002, f"cannot read {path}: {exc.strerror}") from None
        line, limit = params.get("line"), params.get("limit")
        if isinstance(line, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max(0, (line or 1) - 1)
            text = "".join(lines[start : start + limit] if isinstance(limit, int) else lines[start:])
        return {"content": text}

    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        path, content = params.get("path"), params.get("content")
        if not isinstance(path, str) or not isinstance(content, str) or not path.startswith("/"):
            raise ACPError(-32602, "fs/write_text_file: an absolute path and the content")
        data = content.encode("utf-8", "surrogatepass")
        where = {
            "agent": AGENT,
            "cwd": self.workspace,
            "project": self.workspace,
            "session": str(params.get("sessionId", "")),
        }
        try:
            operation = calls.write_operation(
                tool="fs.write", path=path, content=data, state_dir=self.state_dir, **where
            )
        except Refused as exc:
            raise ACPError(-32002, f"denied by agent-console: {exc}") from None
        key = (operation["args"][0], operation["args"][1])
        if key in self._approved_writes:
            self._approved_writes.discard(key)  # the permission asked for exactly this
        else:
            allowed, reason, _ = await self._ask(operation)
            if not allowed:
                raise ACPError(-32002, reason)
        target = operation["args"][0]
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
        return {}

    async def terminal_create(self, params: dict[str, Any]) -> dict[str, Any]:
        command = params.get("command")
        if not isinstance(command, str) or not command:
            raise ACPError(-32602, "terminal/create: a command")
        args = params.get("args") or []
        if args:
            import shlex

            command = shlex.join([command, *[str(a) for a in args]])
        limit = params.get("outputByteLimit")
        terminal = Terminal(
            command, limit=limit if isinstance(limit, int) and limit > 0 else DEFAULT_OUTPUT_LIMIT
        )
        cwd = params.get("cwd") if isinstance(params.get("cwd"), str) else self.workspace
        terminal_id = f"term-{len(self._terminals) + 1}"
        self._terminals[terminal_id] = terminal
        terminal.task = asyncio.create_task(self._run(terminal, str(cwd), str(params.get("sessionId", ""))))
        return {"terminalId": terminal_id}

    async def _run(self, terminal: Terminal, cwd: str, session: str) -> None:
        from console.client import DaemonUnreachable, RPCError
        from console.protocol.notifications import ExecOutput
        from console.protocol.requests import OperationExec, OperationRun
        from console.protocol.results import OperationExecResult, OperationRunResult
        from console.protocol.tickets import TicketFileError, read_secret

        reply: OperationExecResult | OperationRunResult
        try:
            client = await self._daemon()
            client.on_notification(
                "output",
                lambda n: (
                    terminal.add(base64.b64decode(n.data_base64)) if isinstance(n, ExecOutput) else None
                ),
            )
            async with client:
                ticket = self._held.pop(terminal.command, None)
                if ticket is not None:
                    from console.locations import locate

                    secret = read_secret(locate(self.state_dir).runtime_dir, ticket)
                    reply = await client.request(OperationRun(ticket=f"{ticket}:{secret}"))
                else:
                    op = calls.shell_operation(
                        agent=AGENT,
                        tool="terminal",
                        command=terminal.command,
                        cwd=cwd,
                        project=self.workspace,
                        session=session,
                    )
                    reply = await client.request(OperationExec(operation=op))
        except (DaemonUnreachable, RPCError, TicketFileError, Refused) as exc:
            terminal.add(f"agent-console: nothing ran: {getattr(exc, 'message', exc)}\n".encode())
            terminal.exit_code = 126
            terminal.done.set()
            return
        result = reply.result
        if result is None:
            terminal.add(f"agent-console: denied: {reply.decision.reason}\n".encode())
            terminal.exit_code = 126
        else:
            from console.adapters.escalation import hint_for

            for denial in result.denials:
                cap = denial.capability
                hint = hint_for(cap.kind, cap.scope or "")
                terminal.add(f"agent-console: sandbox denied {cap.kind}: {denial.reason}; {hint}\n".encode())
            terminal.exit_code = result.exit_code if result.exit_code is not None else 1
            terminal.signal = result.signal or None
        terminal.done.set()

    def _terminal(self, params: dict[str, Any]) -> Terminal:
        terminal = self._terminals.get(str(params.get("terminalId", "")))
        if terminal is None:
            raise ACPError(-32002, "no such terminal")
        return terminal

    def _status(self, terminal: Terminal) -> dict[str, Any] | None:
        if not terminal.done.is_set():
            return None
        return {"exitCode": terminal.exit_code, "signal": terminal.signal}

    async def terminal_output(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._terminal(params)
        return {
            "output": terminal.output.decode("utf-8", "replace"),
            "truncated": terminal.truncated,
            "exitStatus": self._status(terminal),
        }

    async def terminal_wait(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._terminal(params)
        await terminal.done.wait()
        return {"exitCode": terminal.exit_code, "signal": terminal.signal}

    async def terminal_kill(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._terminal(params)
        if terminal.task is not None and not terminal.task.done():
            terminal.task.cancel()  # the daemon cancels a run whose caller went away
            terminal.exit_code, terminal.signal = None, "SIGKILL"
            terminal.done.set()
        return {}

    async def terminal_release(self, params: dict[str, Any]) -> dict[str, Any]:
        await self.terminal_kill(params)
        self._terminals.pop(str(params.get("terminalId", "")), None)
        return {}

    # ------------------------------------------------------------------ a run

    async def run(self, prompts: list[str]) -> int:
        self.proc = await self.spawn(self.argv, self.workspace, self.env)
        reader = asyncio.create_task(self._read())
        try:
            await self.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {
                        "fs": {"readTextFile": True, "writeTextFile": True},
                        "terminal": True,
                    },
                    "clientInfo": {"name": "agent-console", "version": "1"},
                },
            )
            session = await self.request("session/new", {"cwd": self.workspace, "mcpServers": []})
            self.session_id = str(session["sessionId"])
            for prompt in prompts:
                result = await self.request(
                    "session/prompt",
                    {"sessionId": self.session_id, "prompt": [{"type": "text", "text": prompt}]},
                )
                self.say(f"\n[{(result or {}).get('stopReason', 'done')}]\n")
            return 0
        finally:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
            reader.cancel()
            for task in list(self._tasks):
                task.cancel()


Spawn = Callable[[list[str], str, "dict[str, str] | None"], Awaitable[asyncio.subprocess.Process]]


async def _spawn(argv: list[str], cwd: str, env: dict[str, str] | None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=cwd, env=env, limit=MAX_LINE
    )


def _print(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _choose(options: list[dict[str, Any]], allowed: bool, reason: str) -> dict[str, Any]:
    """The agent's option for the console's answer: allow once or reject once (grants that
    last live in the daemon), cancelled when the agent offers no such option."""
    wanted = ("allow_once",) if allowed else ("reject_once", "reject_always")
    for kind in wanted:
        for option in options:
            if option.get("kind") == kind:
                return {
                    "outcome": {"outcome": "selected", "optionId": option.get("optionId")},
                    "_meta": {"reason": reason},
                }
    return {"outcome": {"outcome": "cancelled"}, "_meta": {"reason": reason}}


HANDLERS: dict[str, Callable[[Host, dict[str, Any]], Any]] = {
    "session/update": Host.session_update,
    "session/request_permission": Host.request_permission,
    "fs/read_text_file": Host.read_text_file,
    "fs/write_text_file": Host.write_text_file,
    "terminal/create": Host.terminal_create,
    "terminal/output": Host.terminal_output,
    "terminal/wait_for_exit": Host.terminal_wait,
    "terminal/kill": Host.terminal_kill,
    "terminal/release": Host.terminal_release,
}
