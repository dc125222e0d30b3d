"""Daemons on other machines, reached over SSH: no new listener anywhere.

Each daemon stays local on its Unix sockets. A console, a CLI verb or the web page
that names a host (``--host ssh://user@box``, ``AGENT_CONSOLE_HOST``, or a named context
from ``agent-console hosts``) reaches that host's ``operator.sock`` through one SSH
connection (asyncssh), host key pinned by known_hosts:

- :mod:`~console.remote.url` reads and checks a host's address;
- :mod:`~console.remote.contexts` keeps the named hosts (``hosts.toml``);
- :mod:`~console.remote.dial` is ``agent-console daemon dial-stdio``, run *on* the host
  by sshd: it authenticates to the daemon there with the token read there;
- :mod:`~console.remote.link` opens operator connections on a host: the first through
  ``dial-stdio``, the next ones over a ``direct-streamlocal`` channel with a one-time
  ticket the daemon gave on an authenticated connection, or through ``dial-stdio`` again
  where the server refuses streamlocal forwarding;
- :mod:`~console.remote.blocking` gives the blocking :class:`~console.client.Client`
  the CLI uses over such a link.
- :mod:`~console.remote.workdir` chooses where a session started on a host runs when
  no directory is named there.

docs/remote.md has the design and the threat model.
"""
