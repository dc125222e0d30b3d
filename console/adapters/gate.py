"""Asking the daemon about one tool call, for any agent's hook.

A shell call goes to ``operation.hold``: allowed, the daemon keeps the decided operation
behind a one-time ticket for this agent and answers the exact command that redeems it
(``agent-console exec --ticket ID``), which the hook hands back to the agent in place of
the model's command. Anything else goes to ``operation.submit``. Every failure — the
daemon down or stalled, a refusal, a bug — becomes a deny with its reason: an
:class:`Answer` is always returned, never an exception, and an allow of a shell call
always carries the command (without it the agent would run the model's text itself).

The agent is named by its process (``agent_pid``: the nearest ancestor that is not a
shell, see :func:`console.protocol.procs.agent_process_pid`), so that the hook and the
``exec`` its agent runs are one identity and a ticket is redeemable by that agent alone.
"""

from __future__ import annotations

import time

from console.adapters.calls import one_line

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import Any

    from console.adapters.hookwire import HookClient

# How long after the hook's own timeout it still waits for the daemon's approval_timeout
# deny (which the daemon records); past it the hook denies by itself. Keeps the whole
# hook within its timeout + 1 s of its start.
ANSWER_GRACE_S = 0.5


class Answer:
    """The console's decision; ``command`` is the ticket command replacing a shell call's
    text. (A plain class: importing :mod:`dataclasses` costs a hook more than this module.)"""

    __slots__ = ("allow", "command", "reason")

    def __init__(self, allow: bool, reason: str, command: str | None = None) -> None:
        self.allow = allow
        self.reason = reason
        self.command = command


def deadline_for(started: float, timeout_s: float) -> float:
    return started + timeout_s + ANSWER_GRACE_S


def _connect(state_dir: str | None, client: str, deadline: float) -> HookClient:
    from console.adapters.hookwire import HookClient
    from console.protocol.procs import agent_process_pid

    return HookClient.connect(
        state_dir,
        client=client,
        deadline=deadline,
        agent_pid=agent_process_pid(),  # the agent process: its calls are one agent
    )


def ask(operation: dict[str, Any], *, state_dir: str | None, deadline: float, client: str) -> Answer:
    """The console's decision on ``operation``, by ``deadline`` (a ``time.monotonic()``)."""
    from console.adapters.hookwire import Refused, Unreachable

    shell = operation.get("kind") == "shell"
    try:
        with _connect(state_dir, client, deadline) as conn:
            wait_s = max(0.05, deadline - ANSWER_GRACE_S - time.monotonic())
            command = None
            if shell:
                held = conn.call("operation.hold", {"operation": operation, "timeout_s": wait_s})
                answer, command = held["decision"], held.get("command")
            else:
                answer = conn.call("operation.submit", {"operation": operation, "timeout_s": wait_s})
    except Unreachable as exc:
        return Answer(False, f"agent-console is unreachable, so nothing is allowed: {exc}")
    except Refused as exc:
        return Answer(False, f"agent-console refused the request: {one_line(exc.message)}")
    except (KeyError, TypeError, AttributeError) as exc:
        return Answer(False, f"agent-console sent a malformed result ({exc!r}); denying")
    method = "operation.hold" if shell else "operation.submit"
    problem = decision_problem(answer) or (_command_problem(command) if shell else "")
    if problem:
        return Answer(False, f"agent-console sent a malformed result of {method} ({problem}); denying")
    return read_answer(answer, command, operation)


# The fields of a decision (console/protocol/results.py OperationDecision) and their types,
# checked here with the standard library as the full client checks them with msgspec:
# an answer of another daemon version, or a bug, is a deny, never read as an allow.
DECISION_FIELDS: dict[str, tuple[type, ...]] = {
    "request_id": (str,),
    "verdict": (str,),
    "reason": (str,),
    "source": (str,),
    "scope": (str,),
    "fingerprint": (str,),
    "note": (str,),
    "escalations": (list,),
    "authorization": (dict, type(None)),
    "decided_at": (int, float),
    "latency_ms": (int, float),
    "denials": (list,),
}


def decision_problem(decision: Any) -> str:
    """What is wrong with a decision as sent ("" when nothing)."""
    if not isinstance(decision, dict):
        return "the decision is not an object"
    for name, kinds in DECISION_FIELDS.items():
        value = decision.get(name)
        if name not in decision or not isinstance(value, kinds) or isinstance(value, bool):
            return f"decision.{name}"
    if decision["verdict"] not in ("allow", "deny"):
        return "decision.verdict"
    return ""


def _command_problem(command: Any) -> str:
    return "" if command is None or isinstance(command, str) else "command"


def read_answer(answer: Any, command: Any, operation: dict[str, Any]) -> Answer:
    """:func:`answer_of` a decision as sent (decoded JSON)."""
    if not isinstance(answer, dict):
        return Answer(False, "agent-console sent no decision; denying")
    return answer_of(
        allow=answer.get("verdict") == "allow",
        source=str(answer.get("source")),
        reason=answer.get("reason") or "",
        note=answer.get("note") or "",
        command=command if isinstance(command, str) else None,
        operation=operation,
    )


def answer_of(
    *, allow: bool, source: str, reason: str, note: str, command: str | None, operation: dict[str, Any]
) -> Answer:
    """The hook's answer to a decision (its verdict, source, reason and note) on
    ``operation``; ``command`` the ticket command that replaces a shell call's text."""
    if allow:
        if operation.get("kind") == "shell" and not command:
            # Never an allow without the rewrite: the agent would run the command itself.
            return Answer(False, "agent-console allowed the command but held no ticket for it; denying")
        how = "; it runs in agent-console's sandbox" if command and "capabilities" not in operation else ""
        said = f"approved by agent-console ({source})" + (f": {note}" if note else "") + how
        return Answer(True, said, command)
    return Answer(False, f"denied by agent-console: {reason or 'denied'}" + (f" — {note}" if note else ""))


def issued(command: str, *, state_dir: str | None, deadline: float, client: str) -> bool:
    """Whether the daemon issued exactly ``command`` for a live ticket of this agent
    (``operation.held``); False on any failure."""
    from console.adapters.hookwire import Refused, Unreachable

    if len(command) > MAX_HELD_COMMAND:
        return False  # longer than anything the daemon issues
    try:
        with _connect(state_dir, client, deadline) as conn:
            return bool(conn.call("operation.held", {"command": command}).get("held"))
    except (Unreachable, Refused, AttributeError):
        return False


# As console/protocol/requests.py bounds operation.held (tests/adapters/test_agents_hooks.py checks it).
MAX_HELD_COMMAND = 8192
