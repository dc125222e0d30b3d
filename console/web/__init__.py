"""``agent-console web``: an approvals-only page for a browser or a phone.

The queue of every host the console is told of, a request's detail with its capability
diff, approve once/session/always and deny with a note — no terminals, no sessions, no
history. It listens on loopback unless told otherwise (reach it through ``ssh -L`` or a
VPN), and everything a browser sends is checked:

- :mod:`~console.web.auth`: the 0600 token file exchanged for a cookie session, CSRF
  tokens, single-use action tokens bound to host + request + fingerprint, push links;
- :mod:`~console.web.inbox`: the pending requests of every host, kept by subscription,
  reconnecting with backoff; decisions go to the owning daemon;
- :mod:`~console.web.page`: the HTML, agent text escaped (made inert, then HTML-escaped),
  never markup;
- :mod:`~console.web.push`: the optional ntfy notification with a single-use link;
- :mod:`~console.web.server`: the aiohttp application: Host and Origin checks, security
  headers, the routes.

docs/remote.md has the threat model.
"""
