"""A held operation's ticket as it travels: the command that redeems it, and its secret file.

The daemon keeps an allowed operation behind a one-time ticket (console/daemon/held.py)
and tells the adapter the exact command that redeems it. That command names the ticket
by its request id only: the secret is never on a command line (``/proc/PID/cmdline`` is
readable by every process of the user). The daemon writes the secret into a file of its
private runtime directory (``tickets/<request id>``, 0600, in a 0700 directory that the
sandbox hides and the Claude Code hook refuses to read), and ``agent-console exec
--ticket ID`` reads it from there. The secret alone is not enough either: the daemon
runs a held operation only for the agent identity that asked for it. Inside a confined
session there is no file (the sandbox does not show the runtime directory): the id
alone redeems there, for the session's own identity only, which the daemon knows by the
sandbox the caller runs in.

The command is built once, by the daemon, from its own interpreter and state
directory, so "the command this daemon issued" is one exact string it can compare
byte for byte (``operation.held``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import stat
from pathlib import Path

# A request id as the broker makes them (console/daemon/broker.py RequestIds).
TICKET_ID = re.compile(r"r-[0-9a-z]{1,16}-[0-9a-z]{1,16}\Z")
SECRET = re.compile(r"[A-Za-z0-9_-]{43}\Z")
TICKETS_DIR = "tickets"


class TicketFileError(RuntimeError):
    """The ticket's secret cannot be read; the message says why (never the secret)."""


class NoTicketFile(TicketFileError):
    """No file holds the ticket's secret: it was used or expired, or the caller runs in a
    confined session, which does not see the runtime directory and needs none (the
    daemon knows its identity by its sandbox: console/daemon/held.py)."""


def tickets_dir(runtime_dir: Path) -> Path:
    return runtime_dir / TICKETS_DIR


def ticket_path(runtime_dir: Path, ticket_id: str) -> Path:
    if not TICKET_ID.match(ticket_id):
        raise TicketFileError(f"not a ticket id: {ticket_id[:40]!r} (r-…-…, as operation.hold named it)")
    return tickets_dir(runtime_dir) / ticket_id


def redeem_command(executable: str, state_dir: str | None, ticket_id: str) -> str:
    """The exact command line that runs the held operation ``ticket_id`` (``state_dir``:
    when the daemon's locations come from one; None for the default locations)."""
    argv = [executable, "-I", "-m", "console", "exec", "--ticket", ticket_id]
    if state_dir is not None:
        argv += ["--state-dir", state_dir]
    return shlex.join(argv)


def write_secret(runtime_dir: Path, ticket_id: str, secret: str) -> None:
    """Create the 0600 file holding ``secret`` (never replacing one: O_EXCL, no symlink)."""
    directory = tickets_dir(runtime_dir)
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    _check_private(directory, "directory")
    path = ticket_path(runtime_dir, ticket_id)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, secret.encode("ascii"))
    finally:
        os.close(fd)


def remove_secret(runtime_dir: Path, ticket_id: str) -> None:
    with contextlib.suppress(FileNotFoundError, TicketFileError):
        os.unlink(ticket_path(runtime_dir, ticket_id))


def clear_secrets(runtime_dir: Path) -> None:
    """Remove every ticket file (a daemon that starts holds no ticket)."""
    directory = tickets_dir(runtime_dir)
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(directory / name)


def read_secret(runtime_dir: Path, ticket_id: str) -> str:
    """The secret of ``ticket_id``, from a file that must be the user's own and 0600."""
    path = ticket_path(runtime_dir, ticket_id)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise NoTicketFile(
            f"no such ticket {ticket_id}: it was already used, it expired, or the daemon restarted"
        ) from None
    except OSError as exc:
        raise TicketFileError(f"cannot read ticket {ticket_id}: {exc.strerror}") from None
    try:
        _check_private_fd(fd, "file")
        secret = os.read(fd, 128).decode("ascii", "replace")
    finally:
        os.close(fd)
    if not SECRET.match(secret):
        raise TicketFileError(f"ticket {ticket_id}: its file does not hold a ticket secret")
    return secret


def _check_private(path: Path, what: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_DIRECTORY)
    try:
        _check_private_fd(fd, what)
    finally:
        os.close(fd)


def _check_private_fd(fd: int, what: str) -> None:
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise TicketFileError(
            f"the ticket {what} is not private (owner {st.st_uid}, mode {st.st_mode & 0o777:o})"
        )
