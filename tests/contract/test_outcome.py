"""Outcome validation and the lifecycle state machine."""

from __future__ import annotations

import pytest

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.outcome import (
    Denial,
    DenialSource,
    Exit,
    NextAction,
    Outcome,
    OutcomeKind,
    State,
    can_transition,
)
from console.contract.problem import InvalidInput

DENIAL = Denial(
    Capability(CapabilityKind.EXTERNAL_NETWORK),
    DenialSource.PLATFORM_SANDBOX,
    "Network is unreachable",
    True,
    NextAction.REQUEST_APPROVAL,
)

VALID = [
    Outcome(State.RUNNING, OutcomeKind.RUNNING, process_id="42"),
    Outcome(State.RETAINED, OutcomeKind.RUNNING, process_id="s-1"),
    Outcome(State.COMPLETED, OutcomeKind.SUCCESS, exit=Exit(0)),
    Outcome(State.DENIED, OutcomeKind.POLICY_DENIED, denial=DENIAL),
    Outcome(State.DENIED, OutcomeKind.ENFORCEMENT_DENIED, denial=DENIAL),
    Outcome(State.FAILED, OutcomeKind.APPLICATION_FAILURE, exit=Exit(1)),
    Outcome(State.FAILED, OutcomeKind.TIMED_OUT, exit=Exit(-1, "SIGKILL")),
    Outcome(State.CANCELLED, OutcomeKind.CANCELLED),
]

INVALID = [
    Outcome(State.RUNNING, OutcomeKind.RUNNING),
    Outcome(State.RUNNING, OutcomeKind.SUCCESS, process_id="1"),
    Outcome(State.COMPLETED, OutcomeKind.SUCCESS, exit=Exit(1)),
    Outcome(State.COMPLETED, OutcomeKind.SUCCESS),
    Outcome(State.COMPLETED, OutcomeKind.APPLICATION_FAILURE, exit=Exit(0)),
    Outcome(State.DENIED, OutcomeKind.POLICY_DENIED),
    Outcome(State.DENIED, OutcomeKind.CANCELLED, denial=DENIAL),
    Outcome(
        State.DENIED,
        OutcomeKind.POLICY_DENIED,
        denial=Denial(
            Capability(CapabilityKind.UNRESTRICTED), DenialSource.APPROVAL, "  ", False, NextAction.NONE
        ),
    ),
    Outcome(State.FAILED, OutcomeKind.SUCCESS, exit=Exit(0)),
    Outcome(State.FAILED, OutcomeKind.APPLICATION_FAILURE),
    Outcome(State.CANCELLED, OutcomeKind.TIMED_OUT),
    Outcome(State.REQUESTED, OutcomeKind.RUNNING, process_id="1"),
]


@pytest.mark.parametrize("outcome", VALID, ids=[f"{o.state}-{o.kind}" for o in VALID])
def test_valid_outcomes(outcome):
    outcome.validate()
    assert outcome.to_dict()["state"] == outcome.state.value


@pytest.mark.parametrize("outcome", INVALID, ids=[f"{o.state}-{o.kind}" for o in INVALID])
def test_invalid_outcomes(outcome):
    with pytest.raises(InvalidInput):
        outcome.validate()


def test_denial_round_trip():
    assert Denial.from_dict(DENIAL.to_dict()) == DENIAL


def test_state_machine():
    assert can_transition(State.REQUESTED, State.EVALUATED)
    assert can_transition(State.EVALUATED, State.AWAITING_APPROVAL)
    assert can_transition(State.AWAITING_APPROVAL, State.PREPARED)
    assert can_transition(State.PREPARED, State.RUNNING)
    assert can_transition(State.RUNNING, State.COMPLETED)
    assert can_transition(State.RUNNING, State.RETAINED)
    assert not can_transition(State.COMPLETED, State.RUNNING)
    assert not can_transition(State.DENIED, State.PREPARED)
    assert not can_transition(State.AWAITING_APPROVAL, State.RUNNING)
    assert not can_transition(State.REQUESTED, State.COMPLETED)
