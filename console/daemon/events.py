"""Subscriptions: who wants to hear about what, and fan-out that never waits on a reader."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any


class Topic(StrEnum):
    PENDING = "pending"  # a request now waits for the operator
    DECIDED = "decided"  # a request left the queue (decided, timed out, cancelled)
    GRANTS = "grants"  # grants or deny-rules changed
    STATUS = "status"  # daemon status: policy reloads and errors, sandbox, store
    SESSIONS = "sessions"  # session created, status changed, exited
    WATCH = "watch"  # workspace file events
    OUTCOMES = "outcomes"  # an operation ran and finished
    ATTENTION = "attention"  # an agent now waits for the person, works again, or is done


Sink = Callable[[dict[str, Any]], None]


class EventHub:
    """Publishes events to subscribed connections.

    A sink must not block: connections queue the frame and drop themselves if their
    reader falls too far behind, so one stuck TUI cannot hold up the broker.
    """

    def __init__(self) -> None:
        self._subscribers: dict[int, tuple[frozenset[Topic], Sink]] = {}

    def subscribe(self, key: int, topics: frozenset[Topic], sink: Sink) -> None:
        self._subscribers[key] = (topics, sink)

    def unsubscribe(self, key: int) -> None:
        self._subscribers.pop(key, None)

    def has_subscribers(self, topic: Topic) -> bool:
        return any(topic in topics for topics, _ in self._subscribers.values())

    def publish(self, topic: Topic, payload: dict[str, Any]) -> None:
        if not self._subscribers:
            return
        message = {"topic": topic.value, **payload}
        for topics, sink in list(self._subscribers.values()):
            if topic in topics:
                sink(message)
