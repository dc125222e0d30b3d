"""Where agent-console keeps its state, and the checks that keep it private.

One state directory holds everything that must outlive a window: the database, the
policy, the operator token, session recordings, logs. The sockets live in a private
runtime directory (``$XDG_RUNTIME_DIR/agent-console`` by default). ``--state-dir`` or
``AGENT_CONSOLE_HOME`` moves all of it — runtime directory included — so tests and demos
never touch the real one.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

ENV_HOME = "AGENT_CONSOLE_HOME"
# sun_path holds 108 bytes including the terminating NUL.
MAX_SOCKET_PATH = 107


class UnsafeLocation(RuntimeError):
    """A directory or file that must be private is not; the message says how to fix it."""


class Locations:
    """The state and runtime directories. A plain class, not a dataclass: every hook
    process reads it, and importing :mod:`dataclasses` would cost each tool call more
    than the rest of this module."""

    __slots__ = ("runtime_dir", "state_dir")

    def __init__(self, state_dir: Path, runtime_dir: Path) -> None:
        object.__setattr__(self, "state_dir", state_dir)
        object.__setattr__(self, "runtime_dir", runtime_dir)

    state_dir: Path
    runtime_dir: Path

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Locations is read-only")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Locations):
            return NotImplemented
        return (self.state_dir, self.runtime_dir) == (other.state_dir, other.runtime_dir)

    def __hash__(self) -> int:
        return hash((self.state_dir, self.runtime_dir))

    def __repr__(self) -> str:
        return f"Locations(state_dir={self.state_dir!r}, runtime_dir={self.runtime_dir!r})"

    def __reduce__(self) -> tuple[type[Locations], tuple[Path, Path]]:
        return (Locations, (self.state_dir, self.runtime_dir))  # copy and pickle by the constructor

    @property
    def database(self) -> Path:
        return self.state_dir / "history.sqlite3"

    @property
    def policy(self) -> Path:
        return self.state_dir / "policy.toml"

    @property
    def token(self) -> Path:
        return self.state_dir / "operator.token"

    @property
    def log(self) -> Path:
        return self.state_dir / "daemon.log"

    @property
    def lock(self) -> Path:
        return self.state_dir / "daemon.lock"

    @property
    def sessions_dir(self) -> Path:
        return self.state_dir / "sessions"

    @property
    def config(self) -> Path:
        return self.state_dir / "config.toml"

    @property
    def agent_socket(self) -> Path:
        return self.runtime_dir / "agent.sock"

    @property
    def operator_socket(self) -> Path:
        return self.runtime_dir / "operator.sock"

    def private_paths(self) -> tuple[Path, ...]:
        """What a sandboxed command must never see."""
        return (self.state_dir, self.runtime_dir)


def locate(state_dir: str | os.PathLike[str] | None = None) -> Locations:
    explicit = state_dir or os.environ.get(ENV_HOME)
    if explicit:
        state = Path(explicit).expanduser().absolute()
        return Locations(state, state / "run")
    xdg_state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    state = Path(xdg_state) / "agent-console"
    runtime_base = os.environ.get("XDG_RUNTIME_DIR")
    runtime = Path(runtime_base) / "agent-console" if runtime_base else state / "run"
    return Locations(state, runtime)


def ensure_private_dir(path: Path, *, create: bool = True) -> None:
    """Make sure ``path`` is a directory only its owner can use, as tmux checks its socket dir.

    Refuses a symlink, another owner, or any group/other permission bit, with a message
    naming the fix rather than silently repairing: a loosened directory may already
    have been tampered with.
    """
    if create:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise UnsafeLocation(f"{path} does not exist") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeLocation(
            f"{path} is a symlink; remove it so agent-console can create a private directory"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeLocation(f"{path} is not a directory; move it away")
    if st.st_uid != os.geteuid():
        raise UnsafeLocation(
            f"{path} is owned by uid {st.st_uid}, not you (uid {os.geteuid()}); "
            "use a directory of your own (--state-dir) or remove it"
        )
    if st.st_mode & 0o077:
        raise UnsafeLocation(
            f"unsafe permissions on {path}: mode {stat.S_IMODE(st.st_mode):04o}, expected 0700; "
            f"fix with: chmod 700 {path}"
        )


def check_socket_path(path: Path) -> None:
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise UnsafeLocation(
            f"socket path {path} is longer than {MAX_SOCKET_PATH} bytes; use a shorter --state-dir"
        )


def read_token(path: Path) -> str:
    """The operator token, refusing a file others could read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UnsafeLocation(f"no operator token at {path}; is the daemon initialised?") from None
    except OSError as exc:
        raise UnsafeLocation(f"cannot read operator token {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise UnsafeLocation(
                f"operator token {path} must be mode 0600 and yours; fix with: chmod 600 {path}"
            )
        return os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)


def create_token(path: Path) -> str:
    """Create the operator token if it does not exist; return it."""
    import secrets  # here: every hook process reads this module, and only the daemon makes tokens

    token = secrets.token_hex(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return read_token(path)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token
