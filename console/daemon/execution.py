"""Running approved captured operations in the sandbox, for `operation.exec`.

The probe runs once at start (its result is in `daemon status` and the console's
header); the sandbox configuration follows the live policy. Output streams to the
requesting connection as notifications while the command runs; the outcome is stored
with the request before the agent hears it.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from console.contract.capabilities import CapabilityKind as K
from console.contract.operation import Operation, is_within
from console.daemon.egress import EgressRun, EgressService, RunContext
from console.daemon.events import EventHub
from console.daemon.policy_source import PolicySource
from console.daemon.watch_service import WatchService
from console.locations import Locations, ensure_private_dir
from console.policy import Authorization
from console.policy.diff import requested
from console.policy.network import NetworkPolicyError, parse_pattern
from console.protocol.events import OutcomeFinished
from console.protocol.notifications import ExecOutput
from console.protocol.records import ExecRecord
from console.protocol.status import SandboxProbeStatus, SandboxStatus
from console.sandbox import (
    ExecResult,
    OutputChunk,
    SandboxConfig,
    SandboxProbe,
    execute,
    probe,
    seccomp,
    sweep,
)
from console.sandbox.guards import mark_refused, touchable
from console.sandbox.home import home_of
from console.sandbox.profile import Egress
from console.sandbox.toolchains import toolchain_path
from console.store import Store, StoreUnavailable, command_line, outcome_event

log = logging.getLogger("agent-console.execution")


@dataclass
class Running:
    request_id: str
    op: Operation
    owner: int
    started_at: float
    cancel: asyncio.Event


def _pattern(scope: str) -> bool:
    """Whether an `external_network` scope names hosts (a domain pattern): only those widen
    the run's allow list; any other scope allows nothing more."""
    try:
        parse_pattern(scope, "external_network")
    except NetworkPolicyError:
        return False
    return True


def _stream_for_history(stream: dict[str, Any]) -> dict[str, Any]:
    """The history keeps the text of a stream's head and tail, not the base64 twin."""
    return {k: v for k, v in stream.items() if not k.endswith("_base64")}


def outcome_record(result: ExecResult) -> dict[str, Any]:
    record = result.to_dict()
    record["stdout"] = _stream_for_history(record["stdout"])
    record["stderr"] = _stream_for_history(record["stderr"])
    return record


class ExecutionService:
    def __init__(
        self,
        loc: Locations,
        policy: PolicySource,
        store: Store,
        events: EventHub,
        watch: WatchService,
        egress: EgressService,
    ) -> None:
        self.loc = loc
        self.egress = egress
        self.watch = watch
        self.policy = policy
        self.store = store
        self.events = events
        self.probe: SandboxProbe | None = None
        self.running: dict[str, Running] = {}
        self._config: tuple[object, SandboxConfig] | None = None
        # The operator's environment at the daemon's start: its PATH gives the toolchains.
        self.environment = dict(os.environ)
        # A sandboxed run's own process wrote a protected path it was not given: stop it
        # now; what it left behind is removed when it ends (console/sandbox/guards.py).
        watch.tripwire.on_operation_wrote = self._refuse

    @property
    def temp_base(self) -> str:
        return str(self.loc.state_dir / "tmp")

    async def start(self) -> None:
        ensure_private_dir(self.loc.state_dir / "tmp")
        removed = await asyncio.to_thread(sweep, self.temp_base)
        if removed:
            log.info("removed %d temp roots left by a previous daemon", removed)
        self.probe = await asyncio.to_thread(probe)
        if self.probe.available:
            log.info("sandbox: %s", self.summary())
        else:
            log.warning("sandbox unavailable: %s", self.probe.reason)

    def summary(self) -> str:
        p = self.probe
        if p is None:
            return "probing"
        if not p.available:
            degraded = " (policy allows degraded runs)" if self.policy().allow_degraded else ""
            return f"UNAVAILABLE: {p.reason}{degraded}"
        net = "network isolated" if p.network_isolated else "network NOT isolated"
        return f"bubblewrap {p.version}, {net}"

    def status(self) -> SandboxStatus:
        policy = self.policy()
        return SandboxStatus(
            summary=self.summary(),
            probe=msgspec.convert(self.probe.to_dict(), SandboxProbeStatus) if self.probe else None,
            running=len(self.running),
            path=list(self.config().path),
            path_source="policy [sandbox] path" if policy.sandbox_path is not None else "the daemon's PATH",
            seccomp=seccomp.description(),
        )

    def config(self) -> SandboxConfig:
        policy = self.policy()
        if self._config is None or self._config[0] is not policy:
            hidden = tuple(map(str, self.loc.private_paths()))
            cfg = SandboxConfig(
                hidden_paths=hidden,
                temp_base=self.temp_base,
                protected=policy.protected_paths,
                readable=policy.readable,
                hidden=policy.hidden,
                allow_degraded=policy.allow_degraded,
                inherit_env=dict(self.environment),
                path=toolchain_path(
                    policy.sandbox_path
                    if policy.sandbox_path is not None
                    else self.environment.get("PATH", ""),
                    home=home_of(self.environment),
                    hidden=hidden,
                ),
            )
            self._config = (policy, cfg)
        return self._config[1]

    @property
    def trusted_path(self) -> str:
        """The PATH executables are looked up on, here and inside the sandbox (toolchains.py)."""
        return ":".join(self.config().path)

    async def run(
        self,
        request_id: str,
        op: Operation,
        auth: Authorization,
        owner: int,
        send_output: Callable[[ExecOutput], None],
        agent: str = "",
    ) -> tuple[ExecRecord, ExecResult]:
        """Execute an allowed operation; returns (the record as stored, the raw result).
        ``agent``: the identity it runs for (its network approvals are that agent's)."""
        assert self.probe is not None, "start() first"
        item = Running(request_id, op, owner, time.time(), asyncio.Event())
        self.running[request_id] = item

        def on_output(chunk: OutputChunk) -> None:
            send_output(
                ExecOutput(
                    request_id=request_id,
                    stream="stdout" if chunk.stream == "stdout" else "stderr",
                    offset=chunk.offset,
                    data_base64=base64.b64encode(chunk.data).decode("ascii"),
                )
            )

        # The workspace is watched before the command starts, so all it changes is seen.
        await self.watch.ensure_root(op.workspace_root)
        self.watch.collect(request_id, op.session_id)
        token = self.watch.begin(op.workspace_root, "operation", request_id, command_line(op), None)
        run = await self.open_egress(op, agent=agent, label=f"request {request_id}", request_id=request_id)
        try:
            result = await execute(
                op,
                auth,
                self.config(),
                self.probe,
                on_output=on_output,
                cancel=item.cancel,
                egress=None if run is None else Egress(run.socket),
                on_start=lambda pid: self.watch.started("operation", request_id, pid),
                others=lambda path: self.watch.made_by_other(request_id, op.workspace_root, path),
            )
        finally:
            if run is not None:
                await self.egress.close(run)
            self.running.pop(request_id, None)
            try:
                changes = await self.watch.changes_of(request_id, op.workspace_root)
            finally:
                self.watch.end(token)
        ended = time.time()
        if result.could_write is not None:
            # The watcher saw it during the run, but the sandbox's mounts say the command
            # could not have made it (a protected file pinned read-only): someone else did.
            real_root = os.path.realpath(op.workspace_root)
            could = result.could_write
            changes = [c for c in changes if could(os.path.normpath(os.path.join(real_root, c.path)))]
        if result.refused:
            changes = mark_refused(changes, list(result.refused))
        result = dataclasses.replace(
            result, outcome=dataclasses.replace(result.outcome, changes=tuple(changes))
        )
        body = outcome_record(result)
        # Typed once, from what the history stores: the answer and the event say the same.
        record = msgspec.convert(body, ExecRecord)
        try:
            await asyncio.wrap_future(
                self.store.append(outcome_event(request_id=request_id, at=ended, outcome=body, op=op))
            )
        except StoreUnavailable as exc:
            log.error("could not record the outcome of %s: %s", request_id, exc)
            record = msgspec.structs.replace(record, recorded=False)
        self.events.publish(
            OutcomeFinished(
                request_id=request_id,
                status=result.status.value,
                kind=result.outcome.kind.value,
                exit_code=result.exit_code,
                denials=record.denials,
            )
        )
        return record, result

    async def open_egress(
        self, op: Operation, *, agent: str, label: str, request_id: str = "", session_id: str = ""
    ) -> EgressRun | None:
        """The egress broker's socket for ``op``'s run, when it asks for the network and
        runs in the sandbox (unrestricted has the host's network, as approved)."""
        caps = {c.kind for c in requested(op, self.policy().protected_paths)}
        if K.EXTERNAL_NETWORK not in caps or K.UNRESTRICTED in caps:
            return None
        scoped = tuple(
            c.scope
            for c in op.requested_capabilities()
            if c.kind is K.EXTERNAL_NETWORK and c.scope and _pattern(c.scope)
        )
        context = RunContext(
            workspace=op.workspace_root,
            agent_id=agent,
            label=label,
            request_id=request_id,
            session_id=session_id,
            also_allow=scoped,
        )
        return await self.egress.open(context)

    def _refuse(self, request_id: str, path: str) -> None:
        """The run wrote ``path``, protected and not approved: it is stopped at once."""
        item = self.running.get(request_id)
        if item is None or item.cancel.is_set():
            return
        where = os.path.join(item.op.workspace_root, path)
        if any(is_within(where, scope) for scope in touchable(item.op, self.policy().protected_paths)):
            return  # the operator approved this protected path for the run
        log.warning(
            "operation %s wrote %s, which is protected: stopped (refused: protected)", request_id, path
        )
        item.cancel.set()

    def cancel(self, request_id: str, owner: int | None = None) -> bool:
        item = self.running.get(request_id)
        if item is None or (owner is not None and item.owner != owner):
            return False
        item.cancel.set()
        return True

    def cancel_owner(self, owner: int) -> None:
        for item in list(self.running.values()):
            if item.owner == owner:
                item.cancel.set()
