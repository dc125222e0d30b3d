"""What the daemon's services refuse, in their own terms.

A service (the broker, sessions, the watcher, workspace trust, identity) raises one of
these; `console/daemon/methods/errors.py` alone turns each into its JSON-RPC error, so
the services know nothing of the wire and are tested without it. The message is safe to
show an operator or an agent; ``data`` carries what a client may act on (e.g. the
offending parameter).
"""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class NotFound(ServiceError):
    """No such request, grant, session, tripwire item or trusted workspace (for you)."""


class AlreadyDecided(ServiceError):
    """The request was decided by someone else first."""


class Conflict(ServiceError):
    """The target is ambiguous, or the connection is already someone else's."""


class InvalidParams(ServiceError):
    """A parameter is wrong in a way only the service can tell (a path, an agent id)."""


class Unauthorized(ServiceError):
    """The caller may not act as the agent or on the thing it named."""


class NotStored(ServiceError):
    """The history could not record a decision: it was denied instead (fail closed)."""


class Unavailable(ServiceError):
    """Not now: the sandbox probe has not finished, a session could not start."""
