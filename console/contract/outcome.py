"""Lifecycle states, outcomes, exits, denials and enforcement reports.

These follow the execution contract: an outcome's kind must agree with its state
(a completed outcome has a zero exit, a denied one a valid denial, ...), and
:func:`Outcome.validate` refuses combinations that would let a caller report, say,
success for a process that was killed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.problem import invalid


class State(StrEnum):
    REQUESTED = "requested"
    EVALUATED = "evaluated"
    AWAITING_APPROVAL = "awaiting_approval"
    PREPARED = "prepared"
    RUNNING = "running"
    RETAINED = "retained"
    COMPLETED = "completed"
    DENIED = "denied"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATES = frozenset({State.COMPLETED, State.DENIED, State.FAILED, State.CANCELLED})

_TRANSITIONS: dict[State, frozenset[State]] = {
    State.REQUESTED: frozenset({State.EVALUATED, State.DENIED, State.CANCELLED}),
    State.EVALUATED: frozenset({State.AWAITING_APPROVAL, State.PREPARED, State.DENIED}),
    State.AWAITING_APPROVAL: frozenset({State.PREPARED, State.DENIED, State.CANCELLED}),
    State.PREPARED: frozenset({State.RUNNING, State.FAILED, State.CANCELLED}),
    State.RUNNING: frozenset({State.RETAINED, State.COMPLETED, State.FAILED, State.CANCELLED}),
    State.RETAINED: frozenset({State.COMPLETED, State.FAILED, State.CANCELLED}),
}


def can_transition(current: State, new: State) -> bool:
    return new in _TRANSITIONS.get(current, frozenset())


class OutcomeKind(StrEnum):
    RUNNING = "running"
    SUCCESS = "success"
    POLICY_DENIED = "policy_denied"
    ENFORCEMENT_DENIED = "enforcement_denied"
    APPLICATION_FAILURE = "application_failure"
    SANDBOX_SETUP_FAILURE = "sandbox_setup_failure"
    EXECUTABLE_NOT_FOUND = "executable_not_found"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"
    OUTPUT_LIMIT = "output_limit"
    ENFORCEMENT_DEGRADED = "enforcement_degraded"


class DenialSource(StrEnum):
    CONFIGURED_POLICY = "configured_policy"
    PLATFORM_SANDBOX = "platform_sandbox"
    APPROVAL = "approval"


# A denial reason of the run itself (not of a policy or an operator): the bytes of a
# file the fingerprint binds are not the bytes it names, so the run did not start
# (console/sandbox/content_pins.py). The outcome is denied / enforcement_denied.
CONTENT_CHANGED = "content_changed"
# How a denial's reason begins when a run left a protected name it was not given: the
# sandbox removed it after the run (console/sandbox/guards.py).
REFUSED_PROTECTED = "refused: protected"


class NextAction(StrEnum):
    NONE = "none"
    REQUEST_APPROVAL = "request_approval"
    CHANGE_COMMAND = "change_command"
    ENABLE_SANDBOX = "enable_sandbox"


@dataclass(frozen=True, slots=True)
class Exit:
    code: int
    signal: str = ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"code": self.code}
        if self.signal:
            d["signal"] = self.signal
        return d


@dataclass(frozen=True, slots=True)
class Denial:
    capability: Capability
    source: DenialSource
    reason: str
    recoverable: bool
    next_action: NextAction

    def validate(self) -> None:
        if not isinstance(self.capability.kind, CapabilityKind):
            raise invalid("denial.capability", "unknown_value", "must be one of the ten capability kinds")
        if not self.reason.strip():
            raise invalid("denial.reason", "empty", "a denial needs a reason")

    def to_dict(self) -> dict[str, Any]:
        return {
            "capability": self.capability.to_dict(),
            "source": self.source.value,
            "reason": self.reason,
            "recoverable": self.recoverable,
            "next_action": self.next_action.value,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Denial:
        cap = d["capability"]
        return cls(
            capability=Capability(CapabilityKind(cap["kind"]), cap.get("scope", "")),
            source=DenialSource(d["source"]),
            reason=str(d["reason"]),
            recoverable=bool(d["recoverable"]),
            next_action=NextAction(d["next_action"]),
        )


@dataclass(frozen=True, slots=True)
class Enforcement:
    backend: str = ""
    level: str = ""
    degraded: bool = False
    downgrade_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "level": self.level,
            "degraded": self.degraded,
            "downgrade_reason": self.downgrade_reason,
        }


class ChangeKind(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class Change:
    """A file change seen in the workspace while an operation ran."""

    path: str
    kind: ChangeKind
    protected: bool = False
    refused: bool = False  # a protected name the run made without approval: removed after it

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind.value, "protected": self.protected}
        if self.refused:
            out["refused"] = True
        return out


@dataclass(frozen=True, slots=True)
class Outcome:
    state: State
    kind: OutcomeKind
    process_id: str = ""
    exit: Exit | None = None
    denial: Denial | None = None
    enforcement: Enforcement = field(default_factory=Enforcement)
    changes: tuple[Change, ...] = ()

    def validate(self) -> None:
        s, k = self.state, self.kind
        if s in (State.RUNNING, State.RETAINED):
            if k is not OutcomeKind.RUNNING or not self.process_id.strip():
                raise invalid(
                    "outcome",
                    "invalid_outcome",
                    "a running outcome needs kind running and a process id",
                )
        elif s is State.COMPLETED:
            if k is not OutcomeKind.SUCCESS or self.exit is None or self.exit.code != 0:
                raise invalid(
                    "outcome",
                    "invalid_outcome",
                    "a completed outcome needs kind success and a zero exit",
                )
        elif s is State.DENIED:
            if k not in (OutcomeKind.POLICY_DENIED, OutcomeKind.ENFORCEMENT_DENIED) or self.denial is None:
                raise invalid(
                    "outcome",
                    "invalid_outcome",
                    "a denied outcome needs a denial kind and denial details",
                )
            self.denial.validate()
        elif s is State.FAILED:
            if k in (OutcomeKind.RUNNING, OutcomeKind.SUCCESS) or self.exit is None:
                raise invalid(
                    "outcome",
                    "invalid_outcome",
                    "a failed outcome needs a failure kind and an exit",
                )
        elif s is State.CANCELLED:
            if k is not OutcomeKind.CANCELLED:
                raise invalid("outcome", "invalid_outcome", "a cancelled outcome needs kind cancelled")
        else:
            raise invalid("outcome", "invalid_outcome", "the state is neither terminal nor observable")

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "kind": self.kind.value,
            "process_id": self.process_id,
            "exit": self.exit.to_dict() if self.exit else None,
            "denial": self.denial.to_dict() if self.denial else None,
            "enforcement": self.enforcement.to_dict(),
            "changes": [c.to_dict() for c in self.changes],
        }
