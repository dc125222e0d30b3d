"""The approval broker: the pending queue, decisions and fail-closed timeouts; the grants
it decides with are kept by its :class:`~console.daemon.grants.GrantBook`.

Everything here runs on the daemon's event loop, so a state change between two awaits
is atomic: a request is taken out of the queue *before* its decision is written, which
is what makes "exactly one operator decision wins" and "a once grant is consumed by
exactly one request" hold. The agent hears a decision only after the store has
committed it; when the store cannot, the answer is a deny with ``store_unavailable``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import msgspec

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.host import DEFAULT_TRUSTED_PATH
from console.contract.operation import Operation
from console.contract.outcome import CONTENT_CHANGED, Denial, DenialSource, NextAction
from console.daemon.durable import Durable
from console.daemon.errors import AlreadyDecided, Conflict, InvalidParams, NotFound, NotStored, ServiceError
from console.daemon.events import EventHub
from console.daemon.grants import MIN_PREFIX, GrantBook
from console.daemon.proposed import proposed_change
from console.policy import Decision, Effect, Grant, GrantScope, PolicyConfig, Verdict, authorize, evaluate
from console.policy.diff import NEW_WORKSPACE
from console.policy.rules import Rule
from console.policy.rules import covers as rule_covers
from console.policy.rules import refusal as rule_refusal
from console.protocol.events import Decided, GrantsUsed, PendingAdded
from console.protocol.grants import GrantObject
from console.protocol.pending import AgentIdentity, PendingItem
from console.protocol.requests import DecideAction
from console.protocol.results import OperationDecision
from console.sandbox.content_pins import content_changed_since
from console.store import (
    Event,
    Store,
    StoreUnavailable,
    command_line,
    decision_event,
    decision_for_request,
    request_event,
)

if TYPE_CHECKING:
    from console.daemon.workspaces import WorkspaceTrust

log = logging.getLogger("agent-console.broker")

# How long a decided request id is remembered, to tell a late second operator
# "already decided" rather than "unknown".
DECIDED_MEMORY_S = 3600.0


class Source(StrEnum):
    POLICY = "policy"
    GRANT = "grant"
    OPERATOR = "operator"
    TIMEOUT = "timeout"
    CANCEL = "cancel"
    SHUTDOWN = "shutdown"
    STORE = "store"


class RequestIds:
    """``r-<daemon start in ms, base 36><2 random>-<counter>``: unique across restarts,
    cheap, and sortable by age. A restart within the same second (a stop and a start in
    a script) once reused the previous run's ids, whose decisions the store refuses to
    overwrite; the milliseconds and the random pair keep them apart."""

    def __init__(self, started: float) -> None:
        salt = _base36(secrets.randbelow(36 * 36)).rjust(2, "0")
        self._prefix = "r-" + _base36(int(started * 1000)) + salt + "-"
        self._next = 0

    def __call__(self) -> str:
        self._next += 1
        return self._prefix + _base36(self._next)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


@dataclass
class Pending:
    id: str
    op: Operation
    evaluation: Decision
    submitted_at: float
    deadline: float
    owner: int  # the submitting connection
    peer_pid: int
    answer: asyncio.Future[OperationDecision]
    timer: asyncio.TimerHandle | None = None
    agent: str = ""  # the submitting agent identity (console/daemon/identity.py)
    shown: AgentIdentity | None = None  # that identity as the operator sees it
    # The request this one replaces because its bound content changed (content_changed).
    supersedes: str = ""
    _wire: PendingItem | None = field(default=None, repr=False)

    def to_wire(self) -> PendingItem:
        """The wire form, made once: every field is fixed at submit (pending.list and the
        pending event send it often). Converted, so a field the item's type does not
        describe is a daemon bug caught here, not in a console."""
        if self._wire is None:
            self._wire = msgspec.convert(self._make_wire(), PendingItem)
        return self._wire

    def _make_wire(self) -> dict[str, Any]:
        ev = self.evaluation.to_dict()
        return {
            "request_id": self.id,
            "fingerprint": self.op.fingerprint,
            "submitted_at": self.submitted_at,
            "deadline": self.deadline,
            "peer_pid": self.peer_pid,
            "agent_id": self.agent,
            **({"agent": msgspec.to_builtins(self.shown)} if self.shown is not None else {}),
            "session_id": self.op.session_id,
            "command": command_line(self.op),
            "operation": self.op.to_wire(),
            "content": [list(pair) for pair in self.op.content],
            "unbound": list(self.op.unbound),
            "supersedes": self.supersedes,
            "proposed": proposed_change(self.op),
            "evaluation": {
                k: ev[k]
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


def _denials(
    decision_escalations: list[dict[str, Any]],
    source: DenialSource,
    reason: str,
    recoverable: bool,
    next_action: NextAction,
) -> list[dict[str, Any]]:
    caps = [Capability(CapabilityKind(e["kind"]), e.get("scope", "")) for e in decision_escalations]
    if not caps:
        caps = [Capability(CapabilityKind.PROCESS_SPAWN)]
    return [Denial(c, source, reason, recoverable, next_action).to_dict() for c in caps]


class Broker:
    def __init__(
        self,
        store: Store,
        events: EventHub,
        policy: Callable[[], PolicyConfig],
        clock: Callable[[], float] = time.time,
        *,
        workspaces: WorkspaceTrust | None = None,
        resolve_path: Callable[[str], str] | None = None,
        trusted_path: Callable[[], str] = lambda: DEFAULT_TRUSTED_PATH,
    ) -> None:
        self.store = store
        self.events = events
        self.policy = policy
        self.clock = clock
        self.pending: dict[str, Pending] = {}
        self._durable = Durable()
        self.grants = GrantBook(store, events, clock, self._durable)
        self._decided: dict[str, float] = {}
        self.new_request_id = RequestIds(clock())
        self._closing = False
        self._background: set[asyncio.Future[None]] = set()
        # The operator's trusted workspaces and the host's path resolver (without them, as
        # in unit tests, the policy's `workspaces` and lexical paths are all there is).
        self.workspaces = workspaces
        self.resolve_path = resolve_path
        # The PATH the daemon looks executables up on (the sandbox's): a changed binding is
        # judged by the same lookup that made it.
        self.trusted_path = trusted_path

    async def settle_orphans(self) -> int:
        """Record how requests left pending by a daemon that died ended: denied, never run.

        Their agents lost the connection with the daemon, so they were told nothing but
        "unreachable", which is a deny too; the history now says so.
        """
        orphans = await asyncio.to_thread(self.store.undecided_requests)
        if not orphans:
            return 0
        now = self.clock()
        events = [
            decision_for_request(
                r,
                at=now,
                verdict="deny",
                source=Source.SHUTDOWN.value,
                reason="daemon_restarted",
                body={"denials": [], "orphaned": True},
            )
            for r in orphans
        ]
        await self._durable(self.store.append(*events))
        log.warning(
            "recorded %d requests left pending by a previous daemon as denied (daemon_restarted)", len(events)
        )
        return len(events)

    # ------------------------------------------------------------------ submit

    async def submit(
        self,
        op: Operation,
        *,
        owner: int,
        peer_pid: int,
        wait_s: float | None = None,
        agent: str = "",
        shown: AgentIdentity | None = None,
        supersedes: str = "",
    ) -> OperationDecision:
        """Evaluate an operation and return the agent's answer once it is durable.

        ``agent`` is the issued identity: session grants are matched against it, never
        against the label the operation carries in ``session_id``; an anonymous identity
        (``shown.anonymous``) matches none. ``supersedes``: the
        request this one submits again because its content changed (shown in the detail).
        """
        now = self.clock()
        rid = self.new_request_id()
        config = self.policy()
        if self._closing:
            return await self._answer_without_queue(
                rid, op, None, peer_pid, now, Verdict.DENY, Source.SHUTDOWN, "daemon_shutdown"
            )
        anonymous = shown is not None and shown.anonymous
        decision = evaluate(
            _as_agent(op, "" if anonymous else agent),
            config,
            self.grants.for_operation(op.fingerprint),
            now,
            trusted=self.workspaces.roots() if self.workspaces is not None else None,
            resolve_path=self.resolve_path,
        )
        request_event = self._request_event(rid, op, peer_pid, now)

        if decision.verdict is Verdict.REVIEW:
            # Shielded: an agent that hangs up now cancels this task, not the write; the
            # request it leaves behind then gets its decision (agent_disconnected).
            stored = asyncio.ensure_future(self._durable(self.store.append(request_event)))
            try:
                await asyncio.shield(stored)
            except StoreUnavailable as exc:
                log.error("store unavailable, denying %s: %s", rid, exc)
                return self._unstored(rid, op, now, decision)
            except asyncio.CancelledError:
                self._decide_abandoned(stored, rid, op, decision, peer_pid, now)
                raise
            timeout = config.approval_timeout_s if wait_s is None else min(wait_s, config.approval_timeout_s)
            loop = asyncio.get_running_loop()
            item = Pending(
                rid,
                op,
                decision,
                now,
                now + timeout,
                owner,
                peer_pid,
                loop.create_future(),
                agent=agent,
                shown=shown,
                supersedes=supersedes,
            )
            item.timer = loop.call_later(timeout, self._expire, rid)
            self.pending[rid] = item
            self.events.publish(PendingAdded(request=item.to_wire()))
            return await asyncio.shield(item.answer)

        grant = decision.grant
        if grant is not None and grant.scope is GrantScope.ONCE and grant.effect is Effect.ALLOW:
            # Consumed here, on the loop, before any await: no second request can see it.
            self.grants.consume_once(grant, now)
        source = Source.GRANT if grant is not None else Source.POLICY
        scope = grant.scope.value if grant is not None else ""
        return await self._answer_without_queue(
            rid,
            op,
            decision,
            peer_pid,
            now,
            decision.verdict,
            source,
            decision.reason,
            scope=scope,
            request_event=request_event,
            grant=grant,
        )

    def _decide_abandoned(
        self,
        stored: asyncio.Future[Any],
        rid: str,
        op: Operation,
        decision: Decision,
        peer_pid: int,
        now: float,
    ) -> None:
        """The agent left while its request was being stored: record how it ended."""

        async def record() -> None:
            try:
                await stored
            except (StoreUnavailable, asyncio.CancelledError):
                return  # not stored, so nothing is left undecided
            self._decided[rid] = self.clock()
            answer = self._answer(
                rid,
                op,
                Verdict.DENY,
                Source.CANCEL,
                "agent_disconnected",
                self.clock(),
                decision=decision,
                submitted_at=now,
            )
            try:
                await self._durable(self.store.append(self._decision_event(answer, op, peer_pid, decision)))
            except StoreUnavailable as exc:
                log.error("store unavailable while recording agent_disconnected for %s: %s", rid, exc)

        task = asyncio.ensure_future(record())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _answer_without_queue(
        self,
        rid: str,
        op: Operation,
        decision: Decision | None,
        peer_pid: int,
        now: float,
        verdict: Verdict,
        source: Source,
        reason: str,
        *,
        scope: str = "",
        request_event: Event | None = None,
        grant: Grant | None = None,
    ) -> OperationDecision:
        answer = self._answer(rid, op, verdict, source, reason, now, decision=decision, scope=scope)
        events = [request_event or self._request_event(rid, op, peer_pid, now)]
        events.append(self._decision_event(answer, op, peer_pid, decision))
        # Answered as soon as the rows are committed: their search entries follow right
        # after, and every search waits for them (console/store/writer.py).
        futures: list[Future[Any]] = [self.store.append(*events, search_later=True)]
        used = self.grants.record_use(grant, now, rid) if grant is not None else None
        if used is not None:
            futures.append(used)
        try:
            for f in futures:
                await self._durable(f)
        except StoreUnavailable as exc:
            log.error("store unavailable, denying %s: %s", rid, exc)
            return self._unstored(rid, op, now, decision)
        self.events.publish(
            Decided(request_id=rid, verdict=answer.verdict, source=source.value, reason=reason, queued=False)
        )
        if grant is not None and grant.scope is GrantScope.ONCE:
            self.events.publish(GrantsUsed(grant_ids=[grant.id]))
        return answer

    # ------------------------------------------------------------------ decide

    def find(self, target: str) -> list[Pending]:
        """Pending requests named by request id or by a fingerprint (or its unique prefix)."""
        if target in self.pending:
            return [self.pending[target]]
        if target.startswith("r-"):
            if target in self._decided:
                raise AlreadyDecided(f"request {target} was already decided")
            raise NotFound(f"no pending request {target}")
        if len(target) < MIN_PREFIX or not all(c in "0123456789abcdef" for c in target):
            raise InvalidParams(
                f"target: a request id (r-…) or at least {MIN_PREFIX} lowercase hex digits of a fingerprint",
            )
        matches = [p for p in self.pending.values() if p.op.fingerprint.startswith(target)]
        fps = {p.op.fingerprint for p in matches}
        if len(fps) > 1:
            raise Conflict(
                f"fingerprint prefix {target} matches {len(fps)} different operations; give more digits",
            )
        if not matches:
            raise NotFound(f"no pending request with fingerprint {target}")
        return matches

    async def decide(
        self,
        target: str,
        action: DecideAction,
        *,
        scope: GrantScope = GrantScope.ONCE,
        expires_in_s: float | None = None,
        note: str = "",
        reason: str = "",
        always: bool = False,
        rule: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """Apply an operator decision; standing grants also settle identical queued requests,
        and a rule the queued requests it covers."""
        items = self.find(target)
        now = self.clock()
        first = items[0]
        grant: Grant | None = None
        if scope is GrantScope.RULE:
            return await self._decide_rule(first, rule, expires_in_s, note, now)
        if action is DecideAction.APPROVE and scope is not GrantScope.ONCE and first.op.unbound:
            raise InvalidParams(
                "this request's content is not fully bound ("
                + "; ".join(r.removeprefix("content not bound: ") for r in first.op.unbound)
                + "): approve once",
                {"unbound": list(first.op.unbound)},
            )
        if (
            action is DecideAction.APPROVE
            and scope is GrantScope.SESSION
            and first.shown is not None
            and first.shown.anonymous
        ):
            raise InvalidParams(
                "this request's agent is anonymous (one call that reached no agent process): a session "
                "grant would hold for nothing, its next call is another identity; approve once or always",
                {"anonymous": True},
            )
        if action is DecideAction.APPROVE and scope is not GrantScope.ONCE:
            grant = Grant(
                id="g-" + secrets.token_hex(5),
                fingerprint=first.op.fingerprint,
                scope=scope,
                effect=Effect.ALLOW,
                session_id=first.agent if scope is GrantScope.SESSION else "",
                created_at=now,
                expires_at=now + expires_in_s if expires_in_s else None,
                note=note,
            )
        elif action is DecideAction.DENY and always:
            grant = Grant(
                id="g-" + secrets.token_hex(5),
                fingerprint=first.op.fingerprint,
                scope=GrantScope.ALWAYS,
                effect=Effect.DENY,
                created_at=now,
                expires_at=now + expires_in_s if expires_in_s else None,
                note=note or reason,
            )
        if grant is not None:
            items = [
                p
                for p in self.pending.values()
                if p.op.fingerprint == first.op.fingerprint and grant.applies(p.op.fingerprint, p.agent, now)
            ] or [first]
        elif target not in self.pending:
            items = [first]  # a once decision by fingerprint settles the oldest only

        # Take them out of the queue now: a second operator gets "already decided".
        for p in items:
            self._take(p.id, now)
        if action is DecideAction.APPROVE:
            changed = await asyncio.to_thread(content_changed_since, first.op, self.trusted_path())
            if changed:
                raise await self._changed_since_shown(items, now, changed)

        granted = None
        if grant is not None:
            granted = GrantObject.of(grant, first.op.tool, command_line(first.op))
            try:
                await self.grants.write(grant, granted)
                if grant.effect is Effect.ALLOW and grant.scope is GrantScope.ALWAYS:
                    await self._trust_new_workspace(first)
            except StoreUnavailable as exc:
                raise self._fail_closed(items, now, exc) from None
            self.grants.admit(grant, granted)

        verdict = Verdict.ALLOW if action is DecideAction.APPROVE else Verdict.DENY
        reason_code = "operator_approved" if action is DecideAction.APPROVE else (reason or "operator_denied")
        answers = []
        for p in items:
            answer = self._answer(
                p.id,
                p.op,
                verdict,
                Source.OPERATOR,
                reason_code,
                now,
                decision=p.evaluation,
                scope=(grant.scope.value if grant else scope.value)
                if action is DecideAction.APPROVE
                else ("always" if always else ""),
                note=note,
                grant=grant,
                submitted_at=p.submitted_at,
            )
            answers.append((p, answer))
        try:
            await self._durable(
                self.store.append(
                    *(self._decision_event(a, p.op, p.peer_pid, p.evaluation) for p, a in answers)
                )
            )
        except StoreUnavailable as exc:
            raise self._fail_closed([p for p, _ in answers], now, exc) from None
        for p, answer in answers:
            self._settle(p, answer)
        return {
            "decided": [p.id for p, _ in answers],
            "verdict": verdict.value,
            "grant": granted,
        }

    async def _decide_rule(
        self, first: Pending, words: tuple[str, ...], expires_in_s: float | None, note: str, now: float
    ) -> dict[str, Any]:
        """Approve ``first`` and make a rule of ``words`` for its agent in its workspace;
        the queued requests the rule covers are allowed with it."""
        why = rule_refusal(first.op, first.evaluation.diff.escalations, words)
        if why is None and not first.agent:
            why = "the request has no agent identity to scope a rule to; approve it once"
        if why is not None:
            raise InvalidParams(f"rule: {why}")
        made = Rule(tuple(words), first.op.workspace_root)
        grant = Grant(
            id="g-" + secrets.token_hex(5),
            fingerprint=made.key(),
            scope=GrantScope.RULE,
            effect=Effect.ALLOW,
            session_id=first.agent,
            created_at=now,
            expires_at=now + expires_in_s if expires_in_s else None,
            note=note,
        )
        items = [first] + [
            p
            for p in self.pending.values()
            if p is not first
            and p.agent == first.agent
            and not p.evaluation.diff.escalations
            and rule_covers(made, p.op)
        ]
        for p in items:
            self._take(p.id, now)
        changed = await asyncio.to_thread(content_changed_since, first.op)
        if changed:
            raise await self._changed_since_shown(items, now, changed)
        granted = GrantObject.of(grant, first.op.tool, "rule: " + made.describe())
        answers = [
            (
                p,
                self._answer(
                    p.id,
                    p.op,
                    Verdict.ALLOW,
                    Source.OPERATOR,
                    "operator_approved",
                    now,
                    decision=p.evaluation,
                    scope=GrantScope.RULE.value,
                    note=note,
                    grant=grant,
                    submitted_at=p.submitted_at,
                ),
            )
            for p in items
        ]
        try:
            await self.grants.write(grant, granted)
            await self._durable(
                self.store.append(
                    *(self._decision_event(a, p.op, p.peer_pid, p.evaluation) for p, a in answers)
                )
            )
        except StoreUnavailable as exc:
            raise self._fail_closed(items, now, exc) from None
        self.grants.admit(grant, granted)
        for p, answer in answers:
            self._settle(p, answer)
        return {"decided": [p.id for p, _ in answers], "verdict": Verdict.ALLOW.value, "grant": granted}

    async def _trust_new_workspace(self, item: Pending) -> None:
        """An "always" approval of a request in a new workspace trusts that workspace."""
        if self.workspaces is None:
            return
        codes = {e.code for e in item.evaluation.diff.escalations}
        if NEW_WORKSPACE in codes:
            await self.workspaces.add(item.op.workspace_root, source="approval", request_id=item.id)

    async def _changed_since_shown(
        self, items: list[Pending], now: float, changed: tuple[str, ...]
    ) -> ServiceError:
        """The bound content is not what the operator saw: the decision applies to nothing.
        Each request is denied ``content_changed`` (recorded, no grant); the agent's call
        submits the operation again as a fresh request that names the old one."""
        answers = [
            (
                p,
                self._answer(
                    p.id,
                    p.op,
                    Verdict.DENY,
                    Source.OPERATOR,
                    CONTENT_CHANGED,
                    now,
                    decision=p.evaluation,
                    submitted_at=p.submitted_at,
                ),
            )
            for p in items
        ]
        try:
            await self._durable(
                self.store.append(
                    *(self._decision_event(a, p.op, p.peer_pid, p.evaluation) for p, a in answers)
                )
            )
        except StoreUnavailable as exc:
            return self._fail_closed(items, now, exc)
        for p, answer in answers:
            self._settle(p, answer)
        return Conflict(
            "changed since shown: "
            + ", ".join(changed)
            + " — nothing was approved; the agent's request comes back as a fresh one, decide again",
            {"reason": CONTENT_CHANGED, "decided": [p.id for p in items], "paths": list(changed)},
        )

    def waiting_of(self, agent: str) -> list[Pending]:
        """The requests of ``agent`` that wait for the operator (console/daemon/ports.py)."""
        return [p for p in self.pending.values() if p.agent == agent]

    async def cancel(self, request_id: str, *, owner: str | None, reason: str = "cancelled") -> bool:
        """Cancel a pending request; ``owner`` (an agent identity) must be the one that asked."""
        item = self.pending.get(request_id)
        if item is None or (owner is not None and item.agent != owner):
            return False
        await self._close_pending(item, Source.CANCEL, reason)
        return True

    async def connection_closed(self, owner: int) -> None:
        """An agent that goes away takes its pending requests with it (recorded)."""
        for item in [p for p in self.pending.values() if p.owner == owner]:
            await self._close_pending(item, Source.CANCEL, "agent_disconnected")

    async def shutdown(self) -> None:
        """Answer every pending request with deny ``daemon_shutdown``, durably."""
        self._closing = True
        items = list(self.pending.values())
        await asyncio.gather(*(self._close_pending(p, Source.SHUTDOWN, "daemon_shutdown") for p in items))
        # Decisions for requests whose agents left mid-submit land before the store closes.
        await asyncio.gather(*list(self._background), return_exceptions=True)

    def _expire(self, rid: str) -> None:
        item = self.pending.get(rid)
        if item is not None:
            task = asyncio.ensure_future(self._close_pending(item, Source.TIMEOUT, "approval_timeout"))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _close_pending(self, item: Pending, source: Source, reason: str) -> None:
        if item.id not in self.pending:
            return
        now = self.clock()
        self._take(item.id, now)
        answer = self._answer(
            item.id,
            item.op,
            Verdict.DENY,
            source,
            reason,
            now,
            decision=item.evaluation,
            submitted_at=item.submitted_at,
        )
        try:
            await self._durable(
                self.store.append(self._decision_event(answer, item.op, item.peer_pid, item.evaluation))
            )
        except StoreUnavailable as exc:
            log.error("store unavailable while recording %s for %s: %s", reason, item.id, exc)
            answer = self._unstored(item.id, item.op, now, item.evaluation)
        self._settle(item, answer)

    def _take(self, rid: str, now: float) -> None:
        item = self.pending.pop(rid)
        if item.timer is not None:
            item.timer.cancel()
        self._decided[rid] = now
        if len(self._decided) > 100_000:
            cutoff = now - DECIDED_MEMORY_S
            self._decided = {k: v for k, v in self._decided.items() if v >= cutoff}

    def _settle(self, item: Pending, answer: OperationDecision) -> None:
        if not item.answer.done():
            item.answer.set_result(answer)
        self.events.publish(
            Decided(
                request_id=item.id,
                verdict=answer.verdict,
                source=answer.source,
                reason=answer.reason,
                queued=True,
            )
        )

    # ------------------------------------------------------------------ records

    def _unstored(self, rid: str, op: Operation, now: float, decision: Decision | None) -> OperationDecision:
        """Fail closed: what the agent hears when its decision could not be stored."""
        return self._answer(rid, op, Verdict.DENY, Source.STORE, "store_unavailable", now, decision=decision)

    def _fail_closed(self, items: list[Pending], now: float, exc: StoreUnavailable) -> ServiceError:
        for p in items:
            self._settle(p, self._unstored(p.id, p.op, now, p.evaluation))
        return NotStored(f"the decision could not be stored: {exc}; the request was denied")

    def _answer(
        self,
        rid: str,
        op: Operation,
        verdict: Verdict,
        source: Source,
        reason: str,
        now: float,
        *,
        decision: Decision | None,
        scope: str = "",
        note: str = "",
        grant: Grant | None = None,
        submitted_at: float | None = None,
    ) -> OperationDecision:
        """The agent's answer, in its Struct: what the method sends and the history records."""
        escalations = decision.diff.as_dict["escalations"] if decision else []
        auth = None
        if verdict is Verdict.ALLOW:
            auth = authorize(
                op,
                source.value,
                grant.id if grant else (decision.grant.id if decision and decision.grant else ""),
            ).to_dict()
        answer: dict[str, Any] = {
            "request_id": rid,
            "verdict": verdict.value,
            "reason": reason,
            "source": source.value,
            "scope": scope,
            "fingerprint": op.fingerprint,
            "note": note,
            "escalations": escalations,
            "authorization": auth,
            "decided_at": now,
            "latency_ms": round((now - (submitted_at if submitted_at is not None else now)) * 1000, 3),
        }
        if verdict is Verdict.DENY:
            if source is Source.POLICY or (source is Source.GRANT):
                denial_source, next_action, recoverable = (
                    DenialSource.CONFIGURED_POLICY,
                    NextAction.CHANGE_COMMAND,
                    False,
                )
            else:
                denial_source, next_action = DenialSource.APPROVAL, NextAction.REQUEST_APPROVAL
                recoverable = reason == CONTENT_CHANGED or source in (
                    Source.TIMEOUT,
                    Source.CANCEL,
                    Source.SHUTDOWN,
                    Source.STORE,
                )
            answer["denials"] = _denials(escalations, denial_source, reason, recoverable, next_action)
        else:
            answer["denials"] = []
        return msgspec.convert(answer, OperationDecision)

    def _request_event(self, rid: str, op: Operation, peer_pid: int, now: float) -> Event:
        return request_event(op, request_id=rid, at=now, peer_pid=peer_pid)

    def _decision_event(
        self, answer: OperationDecision, op: Operation, peer_pid: int, decision: Decision | None
    ) -> Event:
        return decision_event(
            op,
            request_id=answer.request_id,
            at=answer.decided_at,
            verdict=answer.verdict,
            source=answer.source,
            scope=answer.scope,
            reason=answer.reason,
            note=answer.note,
            latency_ms=answer.latency_ms,
            peer_pid=peer_pid,
            # The operator saw the whole diff; a decision the policy or a grant made needs
            # only what it settled (the request keeps the operation it derives from).
            capability_diff=(
                None
                if decision is None
                else decision.diff.as_dict
                if answer.source == Source.OPERATOR
                else {"escalations": decision.diff.as_dict["escalations"]}
            ),
            denials=msgspec.to_builtins(answer.denials),
            grant_id=answer.authorization.grant_id if answer.authorization else "",
        )


def _as_agent(op: Operation, agent: str) -> Operation:
    """The operation as grants see it: its session is the issued identity, not its label."""
    if op.session_id == agent:
        return op
    # A field-for-field copy with one field changed, which is what ``replace`` builds, at a
    # tenth of its cost (it runs ``__init__`` with every field by keyword). The copy keeps
    # the cached fingerprint and command line: neither depends on the session, which is
    # not authority (console/contract/fingerprint.py).
    op.fingerprint  # noqa: B018  (computed once, on the original, and copied with it)
    bound = object.__new__(Operation)
    bound.__dict__.update(op.__dict__)
    bound.__dict__["session_id"] = agent
    return bound
