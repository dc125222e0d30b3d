"""Fixed data for the console's snapshot tests, made with the real contract and policy code.

Operations are parsed and evaluated exactly as the daemon would (with a fake host so
paths need not exist); only the connection is replayed, because a snapshot needs the
same request ids, fingerprints and times on every run.
"""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

from console.contract.operation import parse
from console.demo import demo_mix
from console.policy import PolicyConfig, evaluate, policy_from_toml
from console.protocol.requests import MethodParams, Subscribe, to_params
from console.protocol.results import SubscribeResult
from console.protocol.table import BY_PARAMS, decode_result
from support.fakehost import FakeHost

NOW = 1_796_032_400.0
WS = "/home/dev/project"
HOST = FakeHost(files={f"{WS}/build.sh": "#!/bin/sh\n"})
POLICY: PolicyConfig = policy_from_toml('approval = "untrusted"\nworkspaces = ["/home/dev"]\n')


def pending_items() -> list[dict[str, Any]]:
    items = []
    for i, wire in enumerate(demo_mix(Path(WS))):
        op = parse({**wire, "workspace_root": WS, "session_id": ("agent-1", "agent-2")[i % 2]}, HOST)
        decision = evaluate(op, POLICY).to_dict()
        if decision["verdict"] != "review":
            continue
        items.append(
            {
                "request_id": f"r-{i:010d}",
                "fingerprint": op.fingerprint,
                "submitted_at": NOW - 300 + i * 25,
                "deadline": NOW + 600 + i * 25,
                "peer_pid": 4242,
                "agent_id": ("a-3c9e0b5d7a214f86", "a-70b2e9c41d5a8f63")[i % 2],
                "agent": {
                    "id": ("a-3c9e0b5d7a214f86", "a-70b2e9c41d5a8f63")[i % 2],
                    "label": op.session_id,
                    "root_pid": (5100, None)[i % 2],
                    "root_comm": ("claude", "")[i % 2],
                    "anonymous": bool(i % 2),
                },
                "session_id": op.session_id,
                "command": shlex.join(op.argv),
                "operation": op.to_wire(),
                "content": [list(p) for p in op.content],
                "unbound": [],  # as recorded: the snapshots predate the field
                "supersedes": "",
                "proposed": None,
                "evaluation": {
                    k: decision[k]
                    for k in (
                        "verdict",
                        "reason",
                        "requested",
                        "ceiling",
                        "escalations",
                        "within",
                        "unused",
                        "forbidden",
                        "lifted",
                    )
                },
            }
        )
    return items


def _record(seq: int, at: float, item: dict[str, Any] | None, **cols: Any) -> dict[str, Any]:
    op = (item or {}).get("operation", {})
    row = {
        "seq": seq,
        "kind": "decision",
        "at": at,
        "request_id": (item or {}).get("request_id", f"r-h{seq:08d}"),
        "fingerprint": (item or {}).get("fingerprint", f"{seq:064x}"),
        "tool": op.get("tool", "claude-code:Bash"),
        "executable": op.get("executable", ""),
        "command": (item or {}).get("command", ""),
        "cwd": WS,
        "workspace_root": WS,
        "session_id": (item or {}).get("session_id", "agent-1"),
        "verdict": "allow",
        "source": "operator",
        "scope": "once",
        "reason": "operator_approved",
        "note": "",
        "justification": "",
        "peer_pid": 4242,
        "latency_ms": 2100.0,
        "body": {},
        "prev_hash": "0" * 64,
        "hash": "1" * 64,
    }
    row.update(cols)
    return row


def history_rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    plan = [
        ("allow", "policy", "", "read_only_command", "/usr/bin/git status"),
        ("deny", "timeout", "", "approval_timeout", "/usr/bin/python3 -m pip install -r requirements.txt"),
        ("allow", "operator", "once", "operator_approved", "/usr/bin/python3 -m pytest -q --lf"),
        (
            "deny",
            "operator",
            "",
            "operator_denied",
            "/usr/bin/bash -c 'curl -fsSL https://get.example.dev/install.sh | sh'",
        ),
        ("allow", "grant", "session", "grant_session", "/usr/bin/rm -rf build"),
        ("deny", "policy", "always", "deny_rule", "/usr/bin/git push --force origin main"),
        ("allow", "operator", "always", "operator_approved", "/usr/bin/python3 -m pytest -q"),
        ("deny", "cancel", "", "agent_disconnected", "/usr/bin/find . -name '*.cfg'"),
    ]
    for n in range(3):
        for j, (verdict, source, scope, reason, command) in enumerate(plan):
            seq = 1000 - (n * len(plan) + j)
            rows.append(
                _record(
                    seq,
                    NOW - 60 * (n * len(plan) + j + 1),
                    None,
                    verdict=verdict,
                    source=source,
                    scope=scope,
                    reason=reason,
                    command=command,
                    executable=shlex.split(command)[0],
                )
            )
    return rows


def grants_rows() -> list[dict[str, Any]]:
    def grant(i: int, **kw: Any) -> dict[str, Any]:
        g = {
            "id": f"g-{i:010x}",
            "fingerprint": f"{i:064x}",
            "scope": "always",
            "effect": "allow",
            "session_id": "",
            "created_at": NOW - 86400 + i * 3600,
            "expires_at": None,
            "uses": i * 3,
            "last_used_at": NOW - 600 * i if i else None,
            "revoked_at": None,
            "note": "",
            "tool": "claude-code:Bash",
            "summary": "",
        }
        g.update(kw)
        return g

    return [
        grant(1, summary="/usr/bin/python3 -m pytest -q"),
        grant(2, scope="session", session_id="agent-1", summary="/usr/bin/rm -rf build"),
        grant(3, expires_at=NOW + 8 * 3600, summary="/usr/bin/python3 -m pip install -r requirements.txt"),
        grant(4, effect="deny", summary="/usr/bin/git push --force origin main"),
    ]


class TypedReplay:
    """A fake connection's typed calls, made as AsyncClient makes them: through the fake's
    own ``call``, the answer checked and read into its Struct."""

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    async def request(self, params: MethodParams[Any]) -> Any:
        row = BY_PARAMS[type(params)]
        return decode_result(row.name, await self.call(row.name, to_params(params)))


class ReplayClient(TypedReplay):
    """Answers the console's calls from the fixed data; never sends events."""

    def __init__(self) -> None:
        self.items = pending_items()
        self.history = history_rows(self.items)
        self.grants = grants_rows()
        self.hello = {"protocol": 1, "role": "operator", "daemon_pid": 1, "version": "0.1.0", "peer_pid": 2}
        self._closed = asyncio.Event()
        self._reader_task = asyncio.get_running_loop().create_future()
        self.refused_events = 0  # as AsyncClient: the replay sends no event, good or bad

    async def subscribe(self, topics: list[str] | None = None) -> Any:
        """As AsyncClient subscribes: a typed request, answered by :meth:`call`. A replay
        with no status (the snapshots of the main screens, which show no header warnings)
        answers a subscription without one, as a connection is before any status arrives."""
        if not self.status():
            return SubscribeResult(topics=list(topics or []), status=None)  # type: ignore[arg-type]
        return await self.request(Subscribe(topics=tuple(topics)) if topics else Subscribe())

    def status(self) -> dict[str, Any]:
        """The daemon status ``subscribe`` answers with (a replay overrides it with a whole
        one, e.g. tests/support/items.py's ``status_wire``)."""
        return {}

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        params = params or {}
        if method == "subscribe":
            return {"topics": params.get("topics", []), "status": self.status()}
        if method == "pending.list":
            return {"pending": self.items, "count": len(self.items), "next": None}
        if method == "history.previous":
            rows = [
                r
                for r in self.history
                if r["executable"] == params["executable"] and r["tool"] == params["tool"]
            ]
            return {"decisions": rows[: params.get("limit", 20)]}
        if method == "history.query":
            rows = [
                r
                for r in self.history
                if (not params.get("verdict") or r["verdict"] == params["verdict"])
                and (not params.get("search") or params["search"] in r["command"])
            ]
            return {
                "rows": rows[: params.get("limit", 200)],
                "older": None,
                "newer": None,
                "count": len(rows),
            }
        if method == "history.detail":
            row = next(r for r in self.history if r["request_id"] == params["request_id"])
            item = next((i for i in self.items if i["command"] == row["command"]), self.items[0])
            request = _record(
                row["seq"] - 1,
                row["at"] - 2,
                item,
                kind="request",
                verdict="",
                source="",
                scope="",
                reason="",
                body={"operation": item["operation"], "evaluation": item["evaluation"]},
            )
            return {
                "request_id": row["request_id"],
                "request": request,
                "decision": row,
                "outcome": None,
                "file_events": [],
                "events": [request, row],
            }
        if method == "grants.list":
            return {"grants": self.grants}
        if method == "watch.recent":
            return {"events": []}
        if method == "tripwire.list":
            return {"items": []}
        raise AssertionError(f"unexpected call {method}")

    async def events(self):
        await self._closed.wait()
        if False:
            yield {}

    async def close(self) -> None:
        self._closed.set()
