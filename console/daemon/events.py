"""Subscriptions: who wants to hear about what, and fan-out that never waits on a reader.

Events are the typed Structs of :mod:`console.protocol.events`; each is encoded once,
whatever the number of subscribers, and handed to every sink as ``msgspec.Raw`` JSON
that the connection splices into its ``event`` notification as is.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from console.protocol.events import TOPIC, Event, Topic, encode_event

__all__ = ["EventHub", "Sink", "Topic"]

Sink = Callable[[msgspec.Raw], None]


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

    def publish(self, event: Event) -> None:
        if not self._subscribers:
            return
        topic = TOPIC[type(event)]
        encoded: msgspec.Raw | None = None
        for topics, sink in list(self._subscribers.values()):
            if topic in topics:
                if encoded is None:
                    encoded = encode_event(event)
                sink(encoded)
