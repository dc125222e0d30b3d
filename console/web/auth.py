"""Who may use the web page, and proof that each POST is theirs and meant.

- **The token file** (0600, created beside the console's state, never printed): whoever
  can read it may log in. Logging in exchanges it for a **cookie session** (HttpOnly,
  SameSite=Strict; 256 random bits, kept here only, ended by logout, after
  :data:`SESSION_IDLE_S` unused or :data:`SESSION_MAX_S` in all).
- **CSRF**: every form carries its session's CSRF token; a POST without the right one is
  refused (on top of the Origin and Host checks in the server, and SameSite).
- **Action tokens**: each rendered decision form carries a single-use token bound to the
  session, host, request id and fingerprint; a replayed or altered POST is refused.
- **Push links** (ntfy): single-use and expiring, bound to host, request id and
  fingerprint; a link only opens the page (after login), a decision is still a POST.

Every secret is compared in constant time or looked up by its hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from console.locations import UnsafeLocation

SESSION_IDLE_S = 3600.0
SESSION_MAX_S = 12 * 3600.0
ACTION_TTL_S = 3600.0
LINK_TTL_S = 900.0
MAX_SESSIONS = 32
MAX_ACTIONS = 4096
MAX_LINKS = 1024
LOGIN_FAILURES_PER_MINUTE = 10


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


def web_token(path: Path) -> str:
    """The token in ``path``, made (0600) when missing; refused when others may read it."""
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafeLocation(f"cannot read the web token {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise UnsafeLocation(
                f"the web token {path} must be mode 0600 and yours; fix with: chmod 600 {path}"
            )
        token = os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if len(token) < 32:
        raise UnsafeLocation(
            f"the web token in {path} is too short (32 characters at least); remove the file"
        )
    return token


@dataclass
class Session:
    csrf: str
    created: float
    seen: float


@dataclass(frozen=True)
class Bound:
    """What an action token or a push link was made for."""

    host: str
    request_id: str
    fingerprint: str
    session: bytes  # the session's digest (action tokens); b"" for links
    expires: float


class WebAuth:
    def __init__(self, token: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._token = token.encode()
        self._clock = clock
        self._sessions: OrderedDict[bytes, Session] = OrderedDict()
        self._actions: OrderedDict[bytes, Bound] = OrderedDict()
        self._links: OrderedDict[bytes, Bound] = OrderedDict()
        self._failures: list[float] = []

    # ------------------------------------------------------------------ login

    def login(self, token: str) -> tuple[str, Session] | None:
        """A new session for the right token; None (and counted) for a wrong one."""
        now = self._clock()
        self._failures = [t for t in self._failures if now - t < 60]
        if len(self._failures) >= LOGIN_FAILURES_PER_MINUTE:
            return None
        if not hmac.compare_digest(token.strip().encode("utf-8", "surrogatepass"), self._token):
            self._failures.append(now)
            return None
        self._expire()
        while len(self._sessions) >= MAX_SESSIONS:
            self._sessions.popitem(last=False)
        sid = secrets.token_urlsafe(32)
        session = Session(csrf=secrets.token_urlsafe(32), created=now, seen=now)
        self._sessions[_digest(sid)] = session
        return sid, session

    def throttled(self) -> bool:
        now = self._clock()
        return sum(1 for t in self._failures if now - t < 60) >= LOGIN_FAILURES_PER_MINUTE

    def session(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        self._expire()
        session = self._sessions.get(_digest(sid))
        if session is not None:
            session.seen = self._clock()
        return session

    def logout(self, sid: str | None) -> None:
        if sid:
            self._sessions.pop(_digest(sid), None)

    @staticmethod
    def csrf_ok(session: Session, sent: str | None) -> bool:
        return bool(sent) and hmac.compare_digest(
            session.csrf.encode(), (sent or "").encode("utf-8", "replace")
        )

    # ------------------------------------------------------------------ action tokens

    def action(self, sid: str, host: str, request_id: str, fingerprint: str) -> str:
        """A single-use token for one decision form."""
        self._expire()
        while len(self._actions) >= MAX_ACTIONS:
            self._actions.popitem(last=False)
        token = secrets.token_urlsafe(24)
        self._actions[_digest(token)] = Bound(
            host, request_id, fingerprint, _digest(sid), self._clock() + ACTION_TTL_S
        )
        return token

    def use_action(self, token: str, sid: str, host: str, request_id: str, fingerprint: str) -> bool:
        """True once, for the session, host, request and fingerprint it was made for."""
        self._expire()
        bound = self._actions.pop(_digest(token), None)
        return bound is not None and bound == Bound(
            host, request_id, fingerprint, _digest(sid), bound.expires
        )

    # ------------------------------------------------------------------ push links

    def link(self, host: str, request_id: str, fingerprint: str) -> str:
        self._expire()
        while len(self._links) >= MAX_LINKS:
            self._links.popitem(last=False)
        token = secrets.token_urlsafe(24)
        self._links[_digest(token)] = Bound(host, request_id, fingerprint, b"", self._clock() + LINK_TTL_S)
        return token

    def use_link(self, token: str) -> Bound | None:
        """What the link was for, once; None when unknown, used or expired."""
        self._expire()
        return self._links.pop(_digest(token), None)

    # ------------------------------------------------------------------ upkeep

    def _expire(self) -> None:
        now = self._clock()
        for key, s in list(self._sessions.items()):
            if now - s.seen > SESSION_IDLE_S or now - s.created > SESSION_MAX_S:
                del self._sessions[key]
        for table in (self._actions, self._links):
            for key, bound in list(table.items()):
                if bound.expires <= now:
                    del table[key]
