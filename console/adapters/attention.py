"""Agents' Notification, Stop and UserPromptSubmit hooks: tell the console who waits.

Claude Code sends all three; Codex sends UserPromptSubmit and Stop in the same shape, and
its PermissionRequest (it would ask the person) is ``waiting`` for it.

- ``Notification`` (a permission dialog, or idle at the prompt): ``waiting`` — the
  console shows "waiting for you" and notifies once. ``auth_success`` is no reason to
  wait and is ignored.
- ``UserPromptSubmit``: ``working`` (the prompt's text is never sent). Every supervised
  tool call (PreToolUse, PermissionRequest) also sets ``working``, in the daemon.
- ``Stop``: ``done``.

These hooks only inform: :func:`report` never raises, prints nothing, and gives up
after :data:`DEADLINE_S`, so the hook exits 0 with no output whatever happens. That
matters: exit 2 from Stop makes Claude Code continue instead of stopping, and exit 2
from UserPromptSubmit erases the person's prompt. The daemon keys the state by the
identity it issued to the claude process (``agent_pid``), never by Claude's session id
alone.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import Any

EVENTS = ("Notification", "Stop", "UserPromptSubmit")
DEADLINE_S = 3.0
IGNORED_NOTIFICATIONS = ("auth_success",)
MAX_MESSAGE_CHARS = 500
MAX_SESSION_CHARS = 256
_KIND_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.:")


def _text(hook: dict[str, Any], name: str) -> str:
    value = hook.get(name)
    return value if isinstance(value, str) else ""


def params_for(hook: dict[str, Any], *, permission_waits: bool = False) -> dict[str, Any] | None:
    """The ``agent.attention`` params for one hook call, or None when it says nothing.
    ``permission_waits``: a PermissionRequest event means the agent asks the person."""
    event = hook.get("hook_event_name")
    session = _text(hook, "session_id")[:MAX_SESSION_CHARS].replace("\x00", "")
    if event == "PermissionRequest" and permission_waits:
        tool = _text(hook, "tool_name")[:64]
        return {
            "state": "waiting",
            "session_id": session,
            "message": f"asks to use {tool}",
            "kind": "permission_prompt",
        }
    if event == "Notification":
        kind = _text(hook, "notification_type").lower()[:64]
        if kind in IGNORED_NOTIFICATIONS:
            return None
        if not kind or not set(kind) <= _KIND_CHARS:
            kind = "notification"
        message = _text(hook, "message")[:MAX_MESSAGE_CHARS].replace("\x00", "")
        return {"state": "waiting", "session_id": session, "message": message, "kind": kind}
    if event == "UserPromptSubmit":
        return {"state": "working", "session_id": session, "kind": "prompt"}
    if event == "Stop":
        return {"state": "done", "session_id": session, "kind": "stop"}
    return None


def report(
    hook: dict[str, Any],
    *,
    state_dir: str | None,
    client: str = "claude-code-hook",
    permission_waits: bool = False,
    deadline_s: float = DEADLINE_S,
) -> bool:
    """Send the hook's state to the daemon; True when the daemon took it. Never raises."""
    try:
        params = params_for(hook, permission_waits=permission_waits)
        if params is None:
            return False
        from console.adapters.hookwire import HookClient
        from console.protocol.procs import agent_process_pid

        with HookClient.connect(
            state_dir,
            client=client,
            deadline=time.monotonic() + deadline_s,
            agent_pid=agent_process_pid(),  # the agent process: the same identity as its tool calls
        ) as conn:
            conn.call("agent.attention", params)
        return True
    except BaseException:  # daemon down, stalled, refused, or a bug: the person's session goes on
        return False
