"""The web page's aiohttp application.

Every request passes :func:`guard` first: its ``Host`` must be one this server answers
to (a DNS-rebinding page names another), and a POST must come with an ``Origin`` of
this server (a cross-site form names its own, and a missing one is refused too); every
answer carries a strict Content-Security-Policy, no framing, no referrer to other sites, no
caching.
Then each POST checks its session's CSRF token, and a decision its single-use action
token (console/web/auth.py). A decision whose fingerprint is not the one pending now
answers 409: the request changed after the page showed it, and nothing is decided.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import quote

from aiohttp import web

from console.policy import GrantScope
from console.protocol.ids import FINGERPRINT, REQUEST_ID
from console.protocol.requests import DecideAction
from console.tui.model.badges import confirmation
from console.web import page
from console.web.auth import WebAuth
from console.web.inbox import DecisionRefused, Inbox

log = logging.getLogger("agent-console.web")

SESSION_COOKIE = "ac_session"
PRE_COOKIE = "ac_pre"
MAX_BODY = 64 * 1024
SCOPES = ("once", "session", "always")
_NEXT = re.compile(r"/(req/[^/?#]{1,200}/r-[0-9a-z]{1,13}-[0-9a-z]{1,13})?\Z")
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no-referrer would make a POST's Origin "null"
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Site:
    """Who this server is: the Host values it answers to and the origins it accepts."""

    hosts: set[str]
    origins: set[str]
    secure_cookie: bool = False
    flashes: dict[str, tuple[str, str]] = field(default_factory=dict)


def site_for(bind: str, port: int, public_urls: list[str]) -> Site:
    from urllib.parse import urlsplit

    if bind in ("127.0.0.1", "localhost"):
        names = [f"127.0.0.1:{port}", f"localhost:{port}"]
    elif ":" in bind:
        names = [f"[{bind}]:{port}"] + ([f"localhost:{port}"] if bind == "::1" else [])
    else:
        names = [f"{bind}:{port}"]
    hosts = set(names)
    origins = {f"http://{n}" for n in names}
    secure = False
    for url in public_urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"--public-url {url!r}: http(s)://host[:port] as the browser reaches this page")
        netloc = parts.netloc.lower()
        hosts.add(netloc)
        origins.add(f"{parts.scheme}://{netloc}")
        secure = secure or parts.scheme == "https"
    return Site(hosts=hosts, origins=origins, secure_cookie=secure)


def refuse(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=page.gone_page(None, text), content_type="text/html")


def build_app(inbox: Inbox, auth: WebAuth, site: Site) -> web.Application:
    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = (request.headers.get("Host") or "").lower()
        if host not in site.hosts:
            response: web.StreamResponse = refuse(421, "this server does not answer to that Host name")
        elif request.method not in ("GET", "HEAD") and request.headers.get("Origin") not in site.origins:
            response = refuse(403, "refused: the request did not come from this page (Origin)")
        elif request.method not in ("GET", "HEAD") and request.headers.get(
            "Sec-Fetch-Site", "same-origin"
        ) not in ("same-origin", "none"):
            # (A GET may come from another site: a push link clicked in ntfy's web app.)
            response = refuse(403, "refused: a request from another site")
        else:
            try:
                response = await handler(request)
            except web.HTTPException as exc:  # a redirect, raised as aiohttp does
                exc.headers.update(HEADERS)
                raise
        response.headers.update(HEADERS)
        return response

    app = web.Application(middlewares=[guard], client_max_size=MAX_BODY)

    def sid_of(request: web.Request) -> str | None:
        return request.cookies.get(SESSION_COOKIE)

    def flash(sid: str, text: str, kind: str = "ok") -> None:
        site.flashes[sid] = (text, kind)
        while len(site.flashes) > 64:
            site.flashes.pop(next(iter(site.flashes)))

    def to_login(next_path: str) -> web.HTTPSeeOther:
        return web.HTTPSeeOther(f"/login?next={quote(next_path, safe='')}" if next_path != "/" else "/login")

    async def css(request: web.Request) -> web.Response:
        return web.Response(text=page.CSS, content_type="text/css")

    async def poll_js(request: web.Request) -> web.Response:
        return web.Response(text=page.POLL_JS, content_type="text/javascript")

    def seen(request: web.Request, value: str) -> web.Response:
        """What a page polls for; 401 once its session has ended (the page then reloads
        into the login)."""
        if auth.session(sid_of(request)) is None:
            return web.json_response({"seen": None}, status=401)
        return web.json_response({"seen": value})

    async def queue_state(request: web.Request) -> web.Response:
        return seen(request, inbox.version)

    async def request_state(request: web.Request) -> web.Response:
        host, rid = target(request)
        item = inbox.get(host, rid)
        return seen(request, "" if item is None else item.fingerprint)

    async def login_form(request: web.Request) -> web.Response:
        next_path = request.query.get("next", "/")
        if not _NEXT.fullmatch(next_path):
            next_path = "/"
        pre = secrets.token_urlsafe(24)
        response = web.Response(text=page.login_page(pre, next_path=next_path), content_type="text/html")
        response.set_cookie(
            PRE_COOKIE, pre, httponly=True, samesite="Strict", secure=site.secure_cookie, path="/"
        )
        return response

    async def login(request: web.Request) -> web.Response:
        form = await request.post()
        pre = request.cookies.get(PRE_COOKIE, "")
        next_path = str(form.get("next", "/"))
        if not _NEXT.fullmatch(next_path):
            next_path = "/"
        if not pre or not secrets.compare_digest(pre, str(form.get("pre", ""))):
            return refuse(
                403, "refused: this login form was not served to this browser; reload the login page"
            )
        if auth.throttled():
            return refuse(429, "too many wrong tokens in the last minute; wait, then try again")
        made = auth.login(str(form.get("token", "")))
        if made is None:
            fresh = secrets.token_urlsafe(24)
            response = web.Response(
                status=401,
                text=page.login_page(fresh, next_path=next_path, error="wrong token"),
                content_type="text/html",
            )
            response.set_cookie(
                PRE_COOKIE, fresh, httponly=True, samesite="Strict", secure=site.secure_cookie, path="/"
            )
            return response
        sid, _ = made
        response = web.HTTPSeeOther(next_path)
        response.set_cookie(
            SESSION_COOKIE, sid, httponly=True, samesite="Strict", secure=site.secure_cookie, path="/"
        )
        response.del_cookie(PRE_COOKIE, path="/")
        raise response

    async def logout(request: web.Request) -> web.Response:
        sid = sid_of(request)
        session = auth.session(sid)
        form = await request.post()
        if session is None or not auth.csrf_ok(session, str(form.get("csrf", ""))):
            return refuse(403, "refused: CSRF token missing or wrong; reload the page")
        auth.logout(sid)
        response = web.HTTPSeeOther("/login")
        response.del_cookie(SESSION_COOKIE, path="/")
        raise response

    async def queue(request: web.Request) -> web.Response:
        sid = sid_of(request)
        session = auth.session(sid)
        if session is None or sid is None:
            raise to_login("/")
        hosts = [(h.name, h.state, h.why) for h in inbox.hosts.values()]
        version = inbox.version  # before the items: a change while rendering reloads the page
        text = page.queue_page(session.csrf, hosts, inbox.items(), site.flashes.pop(sid, None), version)
        return web.Response(text=text, content_type="text/html")

    def target(request: web.Request) -> tuple[str, str]:
        host, rid = request.match_info["host"], request.match_info["rid"]
        if host not in inbox.hosts or not REQUEST_ID.fullmatch(rid):
            raise web.HTTPNotFound(
                text=page.gone_page(None, "no such host or request"), content_type="text/html"
            )
        return host, rid

    async def detail(request: web.Request) -> web.Response:
        host, rid = target(request)
        sid = sid_of(request)
        session = auth.session(sid)
        if session is None or sid is None:
            raise to_login(page.request_path(host, rid))
        item = inbox.get(host, rid)
        if item is None:
            return web.Response(
                status=410,
                text=page.gone_page(session.csrf, f"{rid} is no longer pending on {host}"),
                content_type="text/html",
            )
        action = auth.action(sid, host, rid, item.fingerprint)
        text = page.detail_page(session.csrf, host, item, action, site.flashes.pop(sid, None))
        return web.Response(text=text, content_type="text/html")

    async def decide(request: web.Request) -> web.Response:
        host, rid = target(request)
        sid = sid_of(request)
        session = auth.session(sid)
        if session is None or sid is None:
            return refuse(401, "log in first (the session ended); nothing was decided")
        form = await request.post()
        if not auth.csrf_ok(session, str(form.get("csrf", ""))):
            return refuse(403, "refused: CSRF token missing or wrong; reload the page. Nothing was decided")
        fingerprint = str(form.get("fingerprint", ""))
        if not FINGERPRINT.fullmatch(fingerprint) or not auth.use_action(
            str(form.get("action", "")), sid, host, rid, fingerprint
        ):
            return refuse(
                403,
                "refused: this form was already used or was not made for this request (a replay?). "
                "Nothing was decided; open the request again",
            )
        item = inbox.get(host, rid)
        if item is None:
            return refuse(410, f"{rid} is no longer pending on {host}; nothing was decided")
        if item.fingerprint != fingerprint:
            return conflict(session.csrf, host, rid, fingerprint, item.fingerprint)
        decision = str(form.get("decision", ""))
        note = str(form.get("note", ""))[:1024]
        action, scope, expires_in_s = DecideAction.DENY, GrantScope.ONCE, None
        if decision == "deny":
            pass
        elif decision.startswith("approve:") and decision.split(":", 1)[1] in SCOPES:
            action, scope = DecideAction.APPROVE, GrantScope(decision.split(":", 1)[1])
            needed = confirmation(item)
            if needed is not None and str(form.get("word", "")).strip().lower() != needed[0]:
                flash(sid, f"type {needed[0]} to approve {rid}: nothing was decided", "error")
                raise web.HTTPSeeOther(page.request_path(host, rid))
            expires = str(form.get("expires", ""))
            if scope == GrantScope.ALWAYS and expires:
                if not expires.isdigit() or not 1 <= int(expires) <= 315_360_000:
                    return refuse(400, "expires: a number of seconds; nothing was decided")
                expires_in_s = float(expires)
        else:
            return refuse(400, "decision: approve:once, approve:session, approve:always or deny")
        try:
            result = await inbox.decide(
                host, rid, fingerprint, action, scope=scope, note=note, expires_in_s=expires_in_s
            )
        except DecisionRefused as exc:
            if exc.now_pending is not None:
                return conflict(session.csrf, host, rid, fingerprint, exc.now_pending)
            flash(sid, str(exc), "error")
            raise web.HTTPSeeOther("/") from None
        verb = "approved " + scope.value if action == DecideAction.APPROVE else "denied"
        log.info("web: %s %s on %s", verb, rid, host)
        flash(sid, f"{verb}: {', '.join(result.decided)} on {host}")
        raise web.HTTPSeeOther("/")

    def conflict(csrf: str, host: str, rid: str, shown: str, now: str) -> web.Response:
        text = (
            f"refused (conflict): {rid} on {host} changed after this page showed it — you saw fingerprint "
            f"{shown[:12]}…, the request pending now has {now[:12]}…. Nothing was decided; open it "
            "again and read what it asks now"
        )
        return web.Response(
            status=409,
            text=page.gone_page(csrf, text, page.request_path(host, rid)),
            content_type="text/html",
        )

    async def link(request: web.Request) -> web.Response:
        bound = auth.use_link(request.match_info["token"])
        if bound is None:
            return refuse(410, "this link was used already, has expired, or was not made here")
        path = page.request_path(bound.host, bound.request_id)
        item = inbox.get(bound.host, bound.request_id)
        if item is None or item.fingerprint != bound.fingerprint:
            return refuse(410, f"{bound.request_id} is no longer pending on {bound.host}")
        if auth.session(sid_of(request)) is None:
            raise to_login(path)
        raise web.HTTPSeeOther(path)

    app.router.add_get("/static/page.css", css)
    app.router.add_get("/static/poll.js", poll_js)
    app.router.add_get("/state", queue_state)
    app.router.add_get("/req/{host}/{rid}/state", request_state)
    app.router.add_get("/login", login_form)
    app.router.add_post("/login", login)
    app.router.add_post("/logout", logout)
    app.router.add_get("/", queue)
    app.router.add_get("/req/{host}/{rid}", detail)
    app.router.add_post("/req/{host}/{rid}/decide", decide)
    app.router.add_get("/r/{token}", link)
    return app
