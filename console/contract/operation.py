"""Operations: what an agent asks to run, validated strictly and made canonical.

Decoding happens in two steps. :func:`validate_wire` checks the JSON object field by
field (types, enums, ranges, unknown fields) without touching the filesystem;
:func:`resolve` then asks a :class:`~console.contract.host.Host` to canonicalize paths,
find the executable on the trusted PATH and hash the files the operation's authority
depends on. Either step raises :class:`~console.contract.problem.InvalidInput` with a
problem that never repeats the rejected value.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any, Generic, NamedTuple, TypeVar, overload

from console.contract import strictjson
from console.contract.capabilities import Capability, CapabilityKind, normalize_capabilities
from console.contract.content import bind as bind_content
from console.contract.environment import env_is_risky
from console.contract.fingerprint import fingerprint as _fingerprint
from console.contract.host import Host
from console.contract.problem import invalid
from console.contract.workspace import WorkspaceLimits

MAX_STDIN_BYTES = 1 << 20
MAX_STRING_CHARS = 1 << 20
MAX_ARGS = 10_000
MAX_ENV = 1_000
MAX_WRITE_DIRS = 256
MAX_CAPABILITIES = 256
MAX_PATH_CHARS = 4096
MAX_TIMEOUT_MS = 24 * 3600 * 1000
MAX_CAPTURE_BYTES = 64 << 20
MAX_OUTPUT_BYTES = 1 << 30
DEFAULT_TIMEOUT_MS = 120_000
DEFAULT_CAPTURE_BYTES = 65_536
DEFAULT_MAX_BYTES = 8_388_608

# Without the host's facts, still refuse / and the system's directories.
DEFAULT_LIMITS = WorkspaceLimits()

_TOOL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+_-]{0,127}")


@lru_cache(maxsize=1024)
def _valid_tool(tool: str) -> bool:
    """A tool name: agents send a handful of them, on every request."""
    return _TOOL_RE.fullmatch(tool) is not None


class Origin(StrEnum):
    INTERACTIVE_COMMAND = "interactive_command"
    HOOK = "hook"
    PLUGIN = "plugin"
    MCP_SERVER = "mcp_server"
    BACKGROUND_TASK = "background_task"


class Mode(StrEnum):
    CAPTURED = "captured"
    INTERACTIVE = "interactive"
    DURABLE = "durable"


class Kind(StrEnum):
    SHELL = "shell"
    GIT = "git"
    PROCESS = "process"


class WorkspaceAccess(StrEnum):
    READ_ONLY = "read_only"
    WRITE = "write"


class Network(StrEnum):
    NONE = "none"
    ANY = "any"


_T = TypeVar("_T")


class _once(Generic[_T]):
    """A value computed from an instance on first read and kept in its ``__dict__``, where
    later reads find it without reaching this descriptor: ``functools.cached_property``
    without its lock, which on Python 3.11 cost as much as the rest of reading a new
    operation's fingerprint. Two threads racing on a first read both compute the same
    value (an operation is immutable)."""

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> _once[_T]: ...
    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> _T: ...
    def __get__(self, instance: object | None, owner: type[Any] | None = None) -> _T | _once[_T]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.func(instance)
        return value


@dataclass(frozen=True, slots=True)
class OutputLimits:
    capture_bytes: int = DEFAULT_CAPTURE_BYTES
    max_bytes: int = DEFAULT_MAX_BYTES


@dataclass(frozen=True)
class Operation:
    """A validated, canonical operation.

    ``cwd`` is relative to ``workspace_root`` (``"."`` or ``"a/b"``); every other path is
    absolute and canonical. ``content`` maps the files whose bytes decide what runs
    (console/contract/content.py) to their SHA-256, or None when absent.
    """

    kind: Kind
    executable: str
    workspace_root: str
    origin: Origin = Origin.INTERACTIVE_COMMAND
    mode: Mode = Mode.CAPTURED
    tool: str = ""
    args: tuple[str, ...] = ()
    cwd: str = "."
    env: tuple[tuple[str, str], ...] = ()
    stdin: bytes = b""
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    output: OutputLimits = field(default_factory=OutputLimits)
    workspace_access: WorkspaceAccess = WorkspaceAccess.READ_ONLY
    write_dirs: tuple[str, ...] = ()
    network: Network = Network.NONE
    capabilities: tuple[Capability, ...] = ()
    justification: str = ""
    session_id: str = ""
    content: tuple[tuple[str, str | None], ...] = ()
    # What could not be bound (fixed reasons, console/contract/content.py). Derived from
    # the fingerprinted fields, so not part of the fingerprint; a standing grant is refused.
    unbound: tuple[str, ...] = ()

    @property
    def cwd_path(self) -> str:
        """The absolute working directory."""
        if self.cwd == ".":
            return self.workspace_root
        return posixpath.join(self.workspace_root, self.cwd)

    @property
    def argv(self) -> tuple[str, ...]:
        return (self.executable, *self.args)

    @_once
    def command_line(self) -> str:
        """The argv as one shell-quoted line (what history shows and search matches).

        Cached: for a large operation the quoting costs milliseconds, and admission, the
        pending item, the history row and the grant summary all ask for it.
        """
        return shlex.join(self.argv)

    @_once
    def fingerprint(self) -> str:
        return _fingerprint(self)

    def requested_capabilities(self) -> tuple[Capability, ...]:
        """What the operation asks for, derived from its fields plus its explicit list."""
        caps = [
            Capability(CapabilityKind.FILESYSTEM_READ),
            Capability(CapabilityKind.PROCESS_SPAWN),
        ]
        if self.workspace_access is WorkspaceAccess.WRITE:
            caps.append(Capability(CapabilityKind.WORKSPACE_WRITE, self.workspace_root))
        caps.extend(Capability(CapabilityKind.WORKSPACE_WRITE, d) for d in self.write_dirs)
        if self.network is Network.ANY:
            caps.append(Capability(CapabilityKind.EXTERNAL_NETWORK))
        caps.extend(
            Capability(CapabilityKind.ENVIRONMENT, name)
            for name, value in self.env
            if env_is_risky(name, value)
        )
        caps.extend(self.capabilities)
        return normalize_capabilities(caps)

    def to_wire(self) -> dict[str, Any]:
        """The contract's JSON form (canonical values), which :func:`parse` accepts back."""
        return {
            "origin": self.origin.value,
            "mode": self.mode.value,
            "kind": self.kind.value,
            "tool": self.tool,
            "executable": self.executable,
            "args": list(self.args),
            "workspace_root": self.workspace_root,
            "cwd": self.cwd,
            "env": dict(self.env),
            "stdin": base64.b64encode(self.stdin).decode("ascii"),
            "timeout_ms": self.timeout_ms,
            "output": {
                "capture_bytes": self.output.capture_bytes,
                "max_bytes": self.output.max_bytes,
            },
            "workspace_access": self.workspace_access.value,
            "write_dirs": list(self.write_dirs),
            "network": self.network.value,
            "capabilities": [c.to_dict() for c in self.capabilities],
            "justification": self.justification,
            "session_id": self.session_id,
        }


# ---------------------------------------------------------------------------------------
# Step 1: the wire form, field by field, no filesystem.

_FIELDS = frozenset(
    {
        "origin",
        "mode",
        "kind",
        "tool",
        "executable",
        "args",
        "workspace_root",
        "cwd",
        "env",
        "stdin",
        "timeout_ms",
        "output",
        "workspace_access",
        "write_dirs",
        "network",
        "capabilities",
        "justification",
        "session_id",
    }
)


def _string(value: Any, name: str, *, max_chars: int = MAX_STRING_CHARS, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise invalid(name, "wrong_type", "must be a JSON string")
    if "\x00" in value:
        raise invalid(name, "nul_byte", "must not contain a NUL character")
    if len(value) > max_chars:
        raise invalid(name, "too_long", f"must be at most {max_chars} characters")
    if not empty and not value:
        raise invalid(name, "empty", "must not be empty")
    return value


def _strings(values: list[Any], name: str) -> tuple[str, ...]:
    """A list of strings, each checked as :func:`_string` does (``name[i]`` names a bad one).
    The common case — all strings, no NUL, none too long — is checked in one pass in C."""
    try:
        joined = "\x01".join(values)
    except TypeError:
        joined = None
    if (
        joined is not None
        and "\x00" not in joined
        and (len(joined) <= MAX_STRING_CHARS or max(map(len, values), default=0) <= MAX_STRING_CHARS)
    ):
        return tuple(values)
    return tuple(_string(v, f"{name}[{i}]") for i, v in enumerate(values))


def _enum(value: Any, name: str, enum: type[StrEnum]) -> Any:
    member = enum._value2member_map_.get(value) if isinstance(value, str) else None
    if member is not None:
        return member
    allowed = ", ".join(m.value for m in enum)
    if not isinstance(value, str):
        raise invalid(name, "wrong_type", f"must be a string, one of: {allowed}")
    raise invalid(name, "unknown_value", f"must be one of: {allowed}")


def _int(value: Any, name: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid(name, "wrong_type", "must be a JSON integer")
    if not low <= value <= high:
        raise invalid(name, "out_of_range", f"must be between {low} and {high}")
    return value


def _list(value: Any, name: str, max_items: int) -> list[Any]:
    if not isinstance(value, list):
        raise invalid(name, "wrong_type", "must be a JSON array")
    if len(value) > max_items:
        raise invalid(name, "too_many", f"must have at most {max_items} items")
    return value


def _absolute(value: Any, name: str) -> str:
    path = _string(value, name, max_chars=MAX_PATH_CHARS, empty=False)
    if not path.startswith("/"):
        raise invalid(name, "not_absolute", "must be an absolute path (starting with /)")
    return path


class _Spec(NamedTuple):
    """The wire form after field validation: values typed, paths not yet resolved.
    (A tuple: made for every request, where a frozen dataclass's field-by-field setattr
    was a tenth of parsing one.)"""

    kind: Kind
    executable: str
    workspace_root: str
    origin: Origin
    mode: Mode
    tool: str
    args: tuple[str, ...]
    cwd: str
    env: tuple[tuple[str, str], ...]
    stdin: bytes
    timeout_ms: int
    output: OutputLimits
    workspace_access: WorkspaceAccess
    write_dirs: tuple[str, ...]
    network: Network
    capabilities: tuple[Capability, ...]
    justification: str
    session_id: str


def validate_wire(obj: Any) -> _Spec:
    """The wire form's fields checked and typed, in a fixed order (the first bad field,
    in that order, is the one reported).

    Every request comes through here, so each field is first tested in line for the
    common, valid case (an exact ``str``/``int``/``list``/``dict`` within its limits, a
    known enum value, an absent optional field); anything else goes to the field's full
    check, which accepts or refuses it exactly as it would without the shortcut.
    """
    if not isinstance(obj, dict):
        raise invalid("", "not_an_object", "an operation is a JSON object")
    if not _FIELDS.issuperset(obj):
        # The unknown key is agent text; name it only by what is allowed.
        raise invalid(
            "",
            "unknown_field",
            "remove fields that are not in the contract: " + ", ".join(sorted(_FIELDS)),
        )
    for required in ("kind", "executable", "workspace_root"):
        if required not in obj:
            raise invalid(required, "missing", "this field is required")
    get = obj.get

    value = obj["kind"]
    kind = _KINDS.get(value) if type(value) is str else None
    if kind is None:
        kind = _enum(value, "kind", Kind)
    tool = get("tool", kind._value_)
    if not isinstance(tool, str) or not _valid_tool(tool):
        raise invalid(
            "tool",
            "invalid_tool",
            "must be 1-128 characters of letters, digits and ._:/@+_- (e.g. claude-code:Bash)",
        )

    value = get("args", _ABSENT_LIST)
    if type(value) is not list or len(value) > MAX_ARGS:
        value = _list(value, "args", MAX_ARGS)
    args = _strings(value, "args") if value else ()

    env_obj = get("env", _ABSENT_DICT)
    if not isinstance(env_obj, dict):
        raise invalid("env", "wrong_type", "must be a JSON object of name to value")
    env: tuple[tuple[str, str], ...] = ()
    if env_obj:
        if len(env_obj) > MAX_ENV:
            raise invalid("env", "too_many", f"must have at most {MAX_ENV} entries")
        pairs: list[tuple[str, str]] = []
        for i, (name, value) in enumerate(env_obj.items()):
            if not name or "=" in name or "\x00" in name or len(name) > 256:
                raise invalid(
                    f"env[{i}]",
                    "invalid_env_name",
                    "names must be 1-256 characters without '=' or NUL",
                )
            if type(value) is not str or "\x00" in value or len(value) > 128 * 1024:
                _string(value, f"env[{i}]", max_chars=128 * 1024)  # raises, naming the entry
            pairs.append((name, value))
        pairs.sort()
        env = tuple(pairs)

    stdin_text = get("stdin", "")
    if type(stdin_text) is str and not stdin_text:
        stdin = b""
    else:
        stdin_text = _string(stdin_text, "stdin", max_chars=(MAX_STDIN_BYTES * 4) // 3 + 4)
        try:
            stdin = base64.b64decode(stdin_text, validate=True) if stdin_text else b""
        except (binascii.Error, ValueError):
            raise invalid("stdin", "invalid_base64", "must be standard base64 with padding") from None
        if len(stdin) > MAX_STDIN_BYTES:
            raise invalid("stdin", "too_large", f"must decode to at most {MAX_STDIN_BYTES} bytes")

    out_obj = get("output", _ABSENT_DICT)
    if not isinstance(out_obj, dict):
        raise invalid("output", "wrong_type", "must be an object {capture_bytes, max_bytes}")
    if not out_obj:
        output = _DEFAULT_OUTPUT  # the common case: one shared, immutable value
    else:
        if set(out_obj) - {"capture_bytes", "max_bytes"}:
            raise invalid("output", "unknown_field", "only capture_bytes and max_bytes are allowed")
        capture = _int(
            out_obj.get("capture_bytes", DEFAULT_CAPTURE_BYTES),
            "output.capture_bytes",
            0,
            MAX_CAPTURE_BYTES,
        )
        max_bytes = _int(out_obj.get("max_bytes", DEFAULT_MAX_BYTES), "output.max_bytes", 1, MAX_OUTPUT_BYTES)
        if capture > max_bytes:
            raise invalid("output.capture_bytes", "out_of_range", "must not exceed output.max_bytes")
        output = OutputLimits(capture, max_bytes)

    value = get("write_dirs", _ABSENT_LIST)
    write_dirs: tuple[str, ...] = ()
    if type(value) is not list or value:
        write_dirs = tuple(
            _absolute(d, f"write_dirs[{i}]") for i, d in enumerate(_list(value, "write_dirs", MAX_WRITE_DIRS))
        )

    value = get("capabilities", _ABSENT_LIST)
    caps: tuple[Capability, ...] = ()
    if type(value) is not list or value:
        caps = _capabilities(value)

    exe = obj["executable"]
    if type(exe) is not str or not exe or len(exe) > MAX_PATH_CHARS or "\x00" in exe:
        exe = _string(exe, "executable", max_chars=MAX_PATH_CHARS, empty=False)
    root = obj["workspace_root"]
    if type(root) is not str or root[:1] != "/" or len(root) > MAX_PATH_CHARS or "\x00" in root:
        root = _absolute(root, "workspace_root")
    value = get("origin", "interactive_command")
    origin = _ORIGINS.get(value) if type(value) is str else None
    if origin is None:
        origin = _enum(value, "origin", Origin)
    value = get("mode", "captured")
    mode = _MODES.get(value) if type(value) is str else None
    if mode is None:
        mode = _enum(value, "mode", Mode)
    cwd = get("cwd", ".")
    if type(cwd) is not str or not cwd or len(cwd) > MAX_PATH_CHARS or "\x00" in cwd:
        cwd = _string(cwd, "cwd", max_chars=MAX_PATH_CHARS, empty=False)
    timeout_ms = get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if type(timeout_ms) is not int or not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
        timeout_ms = _int(timeout_ms, "timeout_ms", 1, MAX_TIMEOUT_MS)
    value = get("workspace_access", "read_only")
    access = _ACCESSES.get(value) if type(value) is str else None
    if access is None:
        access = _enum(value, "workspace_access", WorkspaceAccess)
    value = get("network", "none")
    network = _NETWORKS.get(value) if type(value) is str else None
    if network is None:
        network = _enum(value, "network", Network)
    justification = get("justification", "")
    if type(justification) is not str or len(justification) > MAX_STRING_CHARS or "\x00" in justification:
        justification = _string(justification, "justification")
    session_id = get("session_id", "")
    if type(session_id) is not str or len(session_id) > 256 or "\x00" in session_id:
        session_id = _string(session_id, "session_id", max_chars=256)

    return _Spec(
        kind,
        exe,
        root,
        origin,
        mode,
        tool,
        args,
        cwd,
        env,
        stdin,
        timeout_ms,
        output,
        access,
        write_dirs,
        network,
        caps,
        justification,
        session_id,
    )


def _capabilities(value: Any) -> tuple[Capability, ...]:
    caps: list[Capability] = []
    for i, c in enumerate(_list(value, "capabilities", MAX_CAPABILITIES)):
        where = f"capabilities[{i}]"
        if not isinstance(c, dict):
            raise invalid(where, "wrong_type", "must be an object {kind, scope?}")
        if set(c) - {"kind", "scope"} or "kind" not in c:
            raise invalid(where, "invalid_capability", "must have kind and optionally scope, nothing else")
        cap_kind = _enum(c["kind"], f"{where}.kind", CapabilityKind)
        scope = _string(c.get("scope", ""), f"{where}.scope", max_chars=MAX_PATH_CHARS)
        if cap_kind in _PATH_SCOPED and scope and not scope.startswith("/"):
            raise invalid(f"{where}.scope", "not_absolute", "a path scope must be absolute")
        caps.append(Capability(cap_kind, scope))
    return tuple(caps)


# Each enum's values to its members, for the in-line test of a valid value.
_KINDS: dict[str, Kind] = {m.value: m for m in Kind}
_ORIGINS: dict[str, Origin] = {m.value: m for m in Origin}
_MODES: dict[str, Mode] = {m.value: m for m in Mode}
_ACCESSES: dict[str, WorkspaceAccess] = {m.value: m for m in WorkspaceAccess}
_NETWORKS: dict[str, Network] = {m.value: m for m in Network}
# What an absent optional field reads as (never handed out, never changed).
_ABSENT_LIST: list[Any] = []
_ABSENT_DICT: dict[str, Any] = {}


_PATH_SCOPED = frozenset({CapabilityKind.WORKSPACE_WRITE, CapabilityKind.PROTECTED_METADATA})
_DEFAULT_OUTPUT = OutputLimits()


# ---------------------------------------------------------------------------------------
# Step 2: canonical paths, the executable, and content binding.


def is_within(path: str, root: str) -> bool:
    """Whether canonical ``path`` is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _relative(path: str, root: str) -> str:
    if path == root:
        return "."
    return path[len(root.rstrip("/")) + 1 :]


def _canonical_dir(host: Host, path: str, name: str) -> str:
    real, kind = host.resolve(path)
    if kind != "dir":
        raise invalid(name, "not_a_directory", "must name an existing directory")
    return real


def resolve(spec: _Spec, host: Host, limits: WorkspaceLimits = DEFAULT_LIMITS) -> Operation:
    root = _canonical_dir(host, posixpath.normpath(spec.workspace_root), "workspace_root")
    refused = limits.refusal(root)
    if refused is not None:
        raise invalid("workspace_root", *refused)

    if ".." in spec.cwd.split("/"):
        raise invalid(
            "cwd",
            "parent_reference",
            "must not contain '..'; name the directory inside the workspace",
        )
    if spec.cwd.startswith("/"):
        cwd_in = spec.cwd
    else:  # posixpath.join for a root that is never empty, without its generality
        cwd_in = f"{root}{spec.cwd}" if root.endswith("/") else f"{root}/{spec.cwd}"
    cwd_real = _canonical_dir(host, posixpath.normpath(cwd_in), "cwd")
    if not is_within(cwd_real, root):
        raise invalid("cwd", "outside_workspace", "must stay inside workspace_root (symlinks are resolved)")

    exe = spec.executable
    if "/" not in exe:
        found = host.which(exe)
        if found is None:
            raise invalid(
                "executable",
                "executable_not_found",
                "not found on the console's trusted PATH; install it or give an absolute path",
            )
        exe_path = found
    else:
        exe_path = exe if exe.startswith("/") else posixpath.join(cwd_real, exe)
    exe_real, exe_kind = host.resolve(posixpath.normpath(exe_path))
    if exe_kind != "exec":
        raise invalid(
            "executable",
            "executable_not_found",
            "must be an existing executable file (after resolving symlinks)",
        )

    write_dirs: tuple[str, ...] = ()
    if spec.write_dirs:
        write_dirs = tuple(
            sorted(
                {
                    _canonical_dir(host, posixpath.normpath(d), f"write_dirs[{i}]")
                    for i, d in enumerate(spec.write_dirs)
                }
            )
        )

    capabilities: tuple[Capability, ...] = ()
    if spec.capabilities:
        caps: list[Capability] = []
        for c in spec.capabilities:
            if c.kind in _PATH_SCOPED:
                scope = host.resolve(posixpath.normpath(c.scope)).path if c.scope else root
                caps.append(Capability(c.kind, scope))
            else:
                caps.append(c)
        capabilities = normalize_capabilities(caps)

    binding = bind_content(host, exe_real, spec.args, cwd_real)

    return _operation(
        {
            "origin": spec.origin,
            "mode": spec.mode,
            "kind": spec.kind,
            "tool": spec.tool,
            "executable": exe_real,
            "args": spec.args,
            "workspace_root": root,
            "cwd": _relative(cwd_real, root),
            "env": spec.env,
            "stdin": spec.stdin,
            "timeout_ms": spec.timeout_ms,
            "output": spec.output,
            "workspace_access": spec.workspace_access,
            "write_dirs": write_dirs,
            "network": spec.network,
            "capabilities": capabilities,
            "justification": spec.justification,
            "session_id": spec.session_id,
            "content": tuple(sorted(binding.content.items())),
            "unbound": tuple(binding.unbound),
        }
    )


def _operation(fields: dict[str, Any]) -> Operation:
    """An :class:`Operation` of exactly these fields, made without the frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field, on every request's path) and
    from a dict made once (keyword arguments would pack a second); equal to
    ``Operation(**fields)`` (tests/contract/test_operation.py holds them so)."""
    op = object.__new__(Operation)
    op.__dict__.update(fields)
    return op


def decode(data: str | bytes) -> Any:
    """Strict JSON, with failures reported as problems."""
    try:
        return strictjson.loads(data)
    except strictjson.StrictJSONError as exc:
        raise invalid("", exc.code, str(exc)) from None


def parse(
    data: str | bytes | Mapping[str, Any], host: Host, limits: WorkspaceLimits = DEFAULT_LIMITS
) -> Operation:
    """Decode, validate and canonicalize one operation; ``limits`` say which directories
    can never be its workspace (the daemon adds the host's homes and its own state)."""
    obj = decode(data) if isinstance(data, str | bytes) else dict(data)
    return resolve(validate_wire(obj), host, limits)
