"""Daemon services wired through narrow interfaces: a method gets
``CallContext.services`` (console/daemon/ports.py ``Services``), so it runs on a few real
services without a daemon process; the watcher and its tripwire get a ``SessionControl``,
and the session service the watcher's ``SessionWatch`` and the tripwire's ``TripwireHold``,
at construction, never attached afterwards."""

from __future__ import annotations

import ast
import asyncio
import time
from types import SimpleNamespace

import pytest
from support.paths import REPO

from console.daemon.broker import Broker
from console.daemon.connection import CallContext
from console.daemon.errors import NotFound
from console.daemon.events import EventHub
from console.daemon.methods import all_methods
from console.daemon.methods.errors import rpc_error
from console.daemon.policy_source import PolicySource
from console.daemon.ports import Services
from console.daemon.tripwire import TripwireItem, TripwireState
from console.daemon.watch_service import WatchService
from console.policy import PolicyConfig
from console.protocol.jsonrpc import RPCError
from console.protocol.params import Params
from console.protocol.requests import TripwireResolution
from console.protocol.results import GrantsAddResult, GrantsListResult, GrantsRevokeResult
from console.store import Store

ROOT = REPO
DAEMON = ROOT / "console" / "daemon"


@pytest.fixture
def services(tmp_path):
    """The services the grant methods use, real, and nothing else: no daemon, no socket."""
    store = Store.open(tmp_path / "history.db")
    broker = Broker(store, EventHub(), PolicyConfig)
    try:
        yield SimpleNamespace(store=store, broker=broker)
    finally:
        store.close()


def call(services, method: str, params: dict) -> object:
    handler = all_methods()[method].handler
    return asyncio.run(handler(CallContext(services=services, conn=None), Params(params)))


def test_grant_methods_run_on_real_services_without_a_daemon(services):
    fingerprint = "ab" * 32
    added = call(services, "grants.add", {"fingerprint": fingerprint, "note": "from a unit test"})
    assert isinstance(added, GrantsAddResult)
    assert added.grant.fingerprint == fingerprint
    listed = call(services, "grants.list", {})
    assert isinstance(listed, GrantsListResult)
    assert [g.fingerprint for g in listed.grants] == [fingerprint]
    revoked = call(services, "grants.revoke", {"target": added.grant.id})
    assert isinstance(revoked, GrantsRevokeResult)
    assert revoked.revoked == [added.grant.id]
    assert call(services, "grants.list", {}) == GrantsListResult(grants=[])


def test_a_method_refusal_reaches_its_caller_as_the_wire_code(services):
    with pytest.raises(RPCError) as refused:
        call(services, "decide", {"target": "r-nothing", "action": "approve"})
    assert refused.value.code == rpc_error(NotFound("x")).code
    with pytest.raises(RPCError) as bad:
        call(services, "grants.add", {"fingerprint": "not hex"})
    assert "fingerprint" in bad.value.message


def _service_attributes(tree: ast.AST) -> set[str]:
    """Every ``X`` in ``ctx.services.X`` or ``daemon.X`` where ``daemon = ctx.services``."""
    aliases = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for value in [node.value]
        if isinstance(target, ast.Name) and ast.unparse(value or ast.Constant(None)) == "ctx.services"
    }
    # ``daemon, agent = ctx.services, ctx.conn.agent``
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
            for target in node.targets:
                if isinstance(target, ast.Tuple):
                    for name, value in zip(target.elts, node.value.elts, strict=False):
                        if isinstance(name, ast.Name) and ast.unparse(value) == "ctx.services":
                            aliases.add(name.id)
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = ast.unparse(node.value)
            if base == "ctx.services" or base in aliases:
                used.add(node.attr)
    return used


def test_methods_use_only_what_services_declares():
    declared = set(Services.__annotations__) | {
        name for name in vars(Services) if not name.startswith("_") and callable(getattr(Services, name))
    }
    files = [*sorted((DAEMON / "methods").glob("*.py")), DAEMON / "admission.py"]
    undeclared = {
        f"{path.relative_to(ROOT)}: {attr}"
        for path in files
        for attr in _service_attributes(ast.parse(path.read_text()))
        if attr not in declared
    }
    assert not undeclared, (
        "methods reach services that console/daemon/ports.py Services does not declare: "
        + ", ".join(sorted(undeclared))
    )
    assert "daemon" not in {f.name for f in CallContext.__dataclass_fields__.values()}


def test_services_get_their_collaborators_at_construction():
    """console/daemon/app.py never assigns into a service it built (``self.watch.sessions
    = …``): a collaborator set afterwards is one a service must check for None."""
    tree = ast.parse((DAEMON / "app.py").read_text())
    late = [
        f"line {node.lineno}: {ast.unparse(target)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Attribute)
        and isinstance(target.value.value, ast.Name)
        and target.value.value.id == "self"
    ]
    assert not late, "services wired after construction: " + "; ".join(late)
    for path in (DAEMON / "watch_service.py", DAEMON / "tripwire_service.py", DAEMON / "session_service.py"):
        text = path.read_text()
        assert "sessions is None" not in text and "assert self.sessions" not in text, path.name
        assert "broker.pending" not in text and "watch.tripwires" not in text, path.name


class RecordingControl:
    """A stand-in SessionControl: the watcher's tripwire acting on sessions it is given."""

    cgroups_available = False

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def sessions(self):
        return ()

    def session(self, session_id):
        raise LookupError(session_id)

    async def pause(self, session_id):
        self.calls.append(("pause", session_id))
        return True

    async def resume(self, session_id):
        self.calls.append(("resume", session_id))

    async def kill(self, session_id):
        self.calls.append(("kill", session_id))

    def changed(self, session_id):
        self.calls.append(("changed", session_id))


@pytest.mark.parametrize(
    ("action", "acted", "state"),
    [
        (TripwireResolution.RESUME, "resume", TripwireState.RESUMED),
        (TripwireResolution.KILL, "kill", TripwireState.KILLED),
        (TripwireResolution.KEEP_PAUSED, None, TripwireState.KEPT),
    ],
)
def test_the_tripwire_answers_through_the_session_control_it_was_given(tmp_path, action, acted, state):
    policy = tmp_path / "policy.toml"
    policy.write_text('tripwire = "pause"\n')
    source = PolicySource(policy)
    source.reload()
    store = Store.open(tmp_path / "history.db")
    control = RecordingControl()
    tripwire = WatchService(source, store, EventHub(), sessions=control).tripwire
    item = TripwireItem(
        id="t-1",
        at=time.time(),
        session="s-1",
        session_label="agent shell",
        workspace_root=str(tmp_path),
        path=str(tmp_path / ".git" / "hooks" / "pre-commit"),
        pattern=".git/hooks/**",
        kind="created",
        diff=None,
    )
    tripwire.items[item.id] = item
    try:
        assert tripwire.holds("s-1")
        answer = asyncio.run(tripwire.resolve("t-1", action, accept=action is TripwireResolution.RESUME))
        assert answer.state == state.value
        expected = ([(acted, "s-1")] if acted else []) + [("changed", "s-1")]
        assert control.calls == expected
        assert tripwire.holds("s-1") is (state is TripwireState.KEPT)
    finally:
        store.close()
