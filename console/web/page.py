"""The page's HTML, built from escaped strings only.

Agent text (commands, arguments, paths, justifications, diffs, labels) is made inert
first — every control, escape, bidi and zero-width character becomes a visible escape,
as in the console — and then HTML-escaped, quotes included; it is never markup, never a
link, never an attribute name. The only script is :data:`POLL_JS`, served from this
server and the same for every page (no agent text in it, no inline script); it asks
every :data:`POLL_S` whether what the page shows still holds, and loads nothing from
elsewhere (the server's Content-Security-Policy says so too). Without it a page still
works: the queue refreshes itself every :data:`NOSCRIPT_REFRESH_S`.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable
from urllib.parse import quote

from console.contract.inert import findings, inert
from console.protocol.pending import DiffLine, PendingItem
from console.tui.model.badges import badges, confirmation
from console.tui.model.words import request_words, shown_command

POLL_S = 0.5  # as long as the console's typed-ahead guard: a new request shows within it
NOSCRIPT_REFRESH_S = 15
COMMAND_CHARS = 160
EXPIRIES = (
    ("", "no expiry"),
    ("3600", "1 hour"),
    ("28800", "8 hours"),
    ("86400", "1 day"),
    ("604800", "7 days"),
)

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:70rem;padding:.8rem;background:#fbfbfa;color:#1d1d1b}
header{display:flex;gap:1rem;align-items:center;justify-content:space-between}
h1{font-size:1.2rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1rem 0 .4rem}
table{border-collapse:collapse;width:100%}td,th{padding:.35rem .5rem;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
pre,code,.cmd{font:13px/1.4 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
pre{background:#f0f0ec;padding:.5rem;border-radius:4px;max-height:24rem;overflow:auto}
.badge{display:inline-block;border-radius:3px;padding:0 .35rem;margin-right:.2rem;font-size:.8rem;font-weight:600;background:#b3261e;color:#fff}
.host{font-weight:600}.ok{color:#1b6e20}.down{color:#b3261e;font-weight:600}.muted{color:#666}
.flash{padding:.5rem;border-radius:4px;background:#e8f0fe}.flash.error{background:#fde7e7}
.warn{padding:.5rem;border-radius:4px;background:#fff4ce}
.esc td:first-child{color:#b3261e;font-weight:600}
form.decide{display:grid;gap:.5rem;max-width:36rem}textarea,input,select{font:inherit;padding:.3rem}
button{font:inherit;padding:.45rem .8rem;border-radius:4px;border:1px solid #888;background:#fff;cursor:pointer}
button.deny{border-color:#b3261e;color:#b3261e}.row{display:flex;gap:.4rem;flex-wrap:wrap}
"""

# The poll: the page names what it shows (``data-seen``) and where to ask whether that
# still holds (``data-poll``). The queue reloads when its requests or hosts changed; a
# request's page only says so (a half-typed note is kept), as its form would be refused.
POLL_JS = """"use strict";
(function () {
  var body = document.body, url = body.dataset.poll, seen = body.dataset.seen;
  var every = Math.max(100, Number(body.dataset.every) * 1000);
  var leaving = false;  // a link clicked, a form sent: a reload now would cancel it
  if (!url) { return; }
  window.addEventListener("beforeunload", function () { leaving = true; });
  function tick() {
    if (leaving) { return; }
    fetch(url, {credentials: "same-origin", cache: "no-store"})
      .then(function (r) {
        if (leaving) { return null; }
        if (r.status === 401) { location.reload(); return null; }
        return r.ok ? r.json() : null;
      })
      .then(function (state) {
        if (leaving || state === null || state.seen === seen) { return; }
        if (body.dataset.change === "reload") { location.reload(); return; }
        var note = document.getElementById("changed");
        if (note) { note.hidden = false; }
      })
      .catch(function () {})
      .then(function () { setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();
"""


def t(text: object) -> str:
    """Untrusted text for HTML: inert, then escaped (quotes too)."""
    return html.escape(inert(str(text)), quote=True)


def block(text: str) -> str:
    """Multi-line untrusted text (a justification, a diff) for a <pre>."""
    return html.escape(inert(text, keep_newlines=True), quote=True)


def request_path(host: str, request_id: str) -> str:
    return f"/req/{quote(host, safe='')}/{quote(request_id, safe='')}"


def state_path(host: str, request_id: str) -> str:
    """Where a request's page asks whether it is still pending, with what fingerprint."""
    return request_path(host, request_id) + "/state"


def _page(title: str, body: str, *, refresh: bool = False, poll: tuple[str, str, str] | None = None) -> str:
    """A page; ``poll`` is (where to ask, what the page shows, ``reload`` or ``note``)."""
    meta = (
        f'<noscript><meta http-equiv="refresh" content="{NOSCRIPT_REFRESH_S}"></noscript>' if refresh else ""
    )
    attrs = (
        f' data-poll="{t(poll[0])}" data-seen="{t(poll[1])}" data-change="{t(poll[2])}" data-every="{POLL_S:g}"'
        if poll
        else ""
    )
    script = '<script src="/static/poll.js"></script>' if poll else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta name="referrer" content="same-origin">{meta}<title>{t(title)}</title>'
        '<link rel="stylesheet" href="/static/page.css"></head>'
        f"<body{attrs}>{body}{script}</body></html>"
    )


def _header(csrf: str | None) -> str:
    logout = (
        f'<form method="post" action="/logout"><input type="hidden" name="csrf" value="{t(csrf)}">'
        '<button type="submit">log out</button></form>'
        if csrf
        else ""
    )
    return f'<header><h1><a href="/">agent-console</a> · approvals</h1>{logout}</header>'


def _flash(flash: tuple[str, str] | None) -> str:
    if not flash:
        return ""
    text, kind = flash
    return f'<p class="flash {t(kind)}" role="status">{t(text)}</p>'


def _age(ts: float) -> str:
    seconds = max(0, int(time.time() - ts))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _badges(item: PendingItem) -> str:
    return "".join(f'<span class="badge">{t(b.label)}</span>' for b in badges(item))


def login_page(pre: str, *, next_path: str = "/", error: str = "") -> str:
    err = f'<p class="flash error" role="alert">{t(error)}</p>' if error else ""
    body = (
        f'{_header(None)}{err}<form method="post" action="/login" class="decide">'
        f'<input type="hidden" name="pre" value="{t(pre)}"><input type="hidden" name="next" value="{t(next_path)}">'
        '<label>Token (from the web token file)<br><input type="password" name="token" autocomplete="off" '
        'required autofocus size="48"></label><button type="submit">Log in</button></form>'
        '<p class="muted">The token is in the file <code>agent-console web</code> named when it started '
        "(mode 0600). It is exchanged for a session cookie here and never sent again.</p>"
    )
    return _page("agent-console: log in", body)


def queue_page(
    csrf: str,
    hosts: Iterable[tuple[str, str, str]],
    items: list[tuple[str, PendingItem]],
    flash: tuple[str, str] | None = None,
    version: str = "",
) -> str:
    states = []
    for name, state, why in hosts:
        if state == "connected":
            states.append(f'<li><span class="host">{t(name)}</span> <span class="ok">connected</span></li>')
        else:
            note = (
                f'<span class="down">unreachable</span> — {t(why)} (its requests fail closed there by '
                "their own timeout; retrying)"
                if state == "unreachable"
                else '<span class="muted">connecting…</span>'
            )
            states.append(f'<li><span class="host">{t(name)}</span> {note}</li>')
    rows = []
    for host, item in items:
        said = shown_command(item)
        command = said if len(said) <= COMMAND_CHARS else said[:COMMAND_CHARS] + "…"
        rows.append(
            f'<tr><td class="host">{t(host)}</td><td>{_age(item.submitted_at)}</td>'
            f"<td>{t(item.operation.tool)}</td><td>{_badges(item)}</td>"
            f'<td class="cmd">{t(command)}</td>'
            f'<td><a href="{t(request_path(host, item.request_id))}">open</a></td></tr>'
        )
    table = (
        '<table class="queue"><thead><tr><th>host</th><th>age</th><th>tool</th><th>badges</th>'
        f"<th>command</th><th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else '<p class="muted">Nothing waits for you.</p>'
    )
    body = (
        f'{_header(csrf)}{_flash(flash)}<ul class="hosts">{"".join(states)}</ul>'
        f"<h2>{len(items)} pending</h2>{table}"
    )
    return _page(
        f"agent-console: {len(items)} pending", body, refresh=True, poll=("/state", version, "reload")
    )


def _diff_rows(title: str, lines: list[DiffLine], css: str = "") -> str:
    if not lines:
        return ""
    rows = "".join(
        f"<tr><td>{t(line.kind)}</td><td>{t(line.scope or '')}</td><td>{t(line.reason)}</td></tr>"
        for line in lines
    )
    return f'<h3>{t(title)}</h3><table class="{css}"><tbody>{rows}</tbody></table>'


def detail_page(
    csrf: str, host: str, item: PendingItem, action: str, flash: tuple[str, str] | None = None
) -> str:
    op, ev = item.operation, item.evaluation
    agent_text = " ".join([item.command, op.justification, item.session_id, *op.args, *op.env.values()])
    found = sorted(f.value for f in findings(agent_text))
    warning = (
        f'<p class="warn" role="alert">The agent\'s text holds {t(", ".join(found))}: shown escaped (\\e, \\u202e, …).</p>'
        if found
        else ""
    )
    env = "".join(f"<li><code>{t(k)}={t(v)}</code></li>" for k, v in sorted(op.env.items()))
    content = "".join(
        f"<li><code>{t(path)}</code> {t(digest[:12]) if digest else '(not yet there)'}</li>"
        for path, digest in item.content
    )
    proposed = ""
    if item.proposed is not None:
        p = item.proposed
        proposed = (
            f"<h2>Proposed change to <code>{t(p.path)}</code>{' (new file)' if p.new_file else ''}</h2>"
            + (f"<pre>{block(p.diff)}</pre>" if p.diff else f'<p class="muted">{t(p.note)}</p>')
        )
    lifted_title = "What approving lifts" if ev.lifted else ""
    diff = (
        _diff_rows("Escalations: beyond the sandbox, what approving grants", ev.escalations, "esc")
        + _diff_rows(lifted_title, ev.lifted, "esc")
        + _diff_rows("Within the sandbox", ev.within)
        + ("" if ev.lifted else _diff_rows("Still forbidden by the sandbox", ev.forbidden))
    ) or '<p class="muted">No escalations: within the sandbox.</p>'
    needed = confirmation(item)
    word = (
        f'<p class="warn" role="alert">{t(needed[1])} Type <strong>{t(needed[0])}</strong> to approve it.</p>'
        f'<label>Type {t(needed[0])} to approve<br><input name="word" autocomplete="off" '
        f'placeholder="{t(needed[0])}"></label>'
        if needed
        else ""
    )
    expiries = "".join(f'<option value="{v}">{t(label)}</option>' for v, label in EXPIRIES)
    form = (
        f'<form method="post" action="{t(request_path(host, item.request_id))}/decide" class="decide">'
        f'<input type="hidden" name="csrf" value="{t(csrf)}"><input type="hidden" name="action" value="{t(action)}">'
        f'<input type="hidden" name="fingerprint" value="{t(item.fingerprint)}">{word}'
        f'<label>"Always" expires after <select name="expires">{expiries}</select></label>'
        '<div class="row"><button name="decision" value="approve:once">Approve once</button>'
        '<button name="decision" value="approve:session">Approve for the agent session</button>'
        '<button name="decision" value="approve:always">Approve always</button></div>'
        "<label>Note (sent to the agent with a denial or an approval)<br>"
        '<textarea name="note" rows="2" maxlength="1024"></textarea></label>'
        '<div class="row"><button class="deny" name="decision" value="deny">Deny</button></div></form>'
    )
    facts = [
        ("host", host),
        ("request", item.request_id),
        ("fingerprint", item.fingerprint),
        ("agent", item.agent_id),
        ("agent session", item.session_id),
        ("tool", op.tool),
        ("workspace", op.workspace_root),
        ("cwd", op.cwd),
        ("access", op.workspace_access),
        ("network", op.network),
        ("origin / mode", f"{op.origin} / {op.mode}"),
    ]
    fact_rows = "".join(f"<tr><th>{t(k)}</th><td><code>{t(v)}</code></td></tr>" for k, v in facts)
    changed = (
        '<p id="changed" class="flash error" role="alert" hidden>This request was decided elsewhere, timed '
        "out or changed since this page showed it: a decision from this page would be refused. "
        '<a href="/">Back to the queue</a>.</p>'
    )
    body = (
        f'{_header(csrf)}{_flash(flash)}{changed}<h2>{t(item.request_id)} on <span class="host">{t(host)}</span> '
        f'{_badges(item)}</h2><p class="muted">Approve and deny act on this request only: host, id and '
        f"fingerprint.</p>{warning}<h2>Command</h2><pre>{t(shown_command(item))}</pre>"
        + (f'<p class="muted">submitted as <code>{t(item.command)}</code></p>' if request_words(item) else "")
        + f"<h2>Capability diff</h2>{diff}{proposed}"
        + (
            f"<h2>Justification (the agent's words)</h2><pre>{block(op.justification)}</pre>"
            if op.justification
            else ""
        )
        + (f"<h2>Environment overrides</h2><ul>{env}</ul>" if env else "")
        + (f"<h2>Files the decision binds</h2><ul>{content}</ul>" if content else "")
        + (
            f'<p class="warn">Not fully bound ({t(", ".join(item.unbound))}): approve once only.</p>'
            if item.unbound
            else ""
        )
        + f"<table>{fact_rows}</table><h2>Decide</h2>{form}"
    )
    return _page(
        f"agent-console: {item.request_id} on {host}",
        body,
        poll=(state_path(host, item.request_id), item.fingerprint, "note"),
    )


def gone_page(csrf: str | None, text: str, again: str = "") -> str:
    """A refusal or a request no longer there; ``again``: the request's page, to open it anew."""
    link = f'<a href="{t(again)}">open the request again</a> · ' if again else ""
    return _page(
        "agent-console",
        f'{_header(csrf)}<p class="flash error" role="alert">{t(text)}</p><p>{link}<a href="/">the queue</a></p>',
    )
