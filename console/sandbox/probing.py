"""The sandbox probe: does bubblewrap really give the boundary we rely on?

A version string proves little, so the probe runs a small Python program inside the
exact sandbox a command would get (the same :func:`~console.sandbox.bwrap.bwrap_argv`,
the same system surface and seccomp filter) and checks from inside: that the user, pid,
net, ipc and uts namespaces differ from the daemon's, that the root is read-only, that
a listener on the host's loopback, opened by the probe for the purpose, cannot be
reached, and whether the seccomp filter refuses ``ptrace``.

The daemon runs :func:`probe` once at start (in a thread: it blocks for tens of
milliseconds) and shows the result in `daemon status` and the console header.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

from console.contract.host import DEFAULT_TRUSTED_PATH
from console.sandbox import seccomp
from console.sandbox.bwrap import Bind, BindMode, Boundary, Launcher, bwrap_argv
from console.sandbox.memfd import sealed
from console.sandbox.surface import system_surface

BACKEND = "bubblewrap"
MINIMUM_VERSION = (0, 4, 0)
# --disable-userns appeared in 0.8.0; older versions still isolate, without that lock.
DISABLE_USERNS_VERSION = (0, 8, 0)
_TIMEOUT_S = 10.0
_NAMESPACES = ("user", "pid", "net", "ipc", "uts")

# Runs inside the sandbox with `python -I -S -c`; prints one JSON line.
_INSIDE = r"""
import json, os, socket, sys
ns = {}
for name in ("user", "pid", "net", "ipc", "uts"):
    try:
        ns[name] = os.readlink("/proc/self/ns/" + name)
    except OSError:
        ns[name] = ""
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(2.0)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
    reached = True
except OSError:
    reached = False
finally:
    s.close()
try:
    os.mkdir("/agent-console-probe-write")
    root_writable = True
    os.rmdir("/agent-console-probe-write")
except OSError:
    root_writable = False
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
traced = libc.syscall(int(sys.argv[2]), 0x4206, 1, 0, 0) if int(sys.argv[2]) >= 0 else 0
filtered = traced == -1 and ctypes.get_errno() == 1
print(json.dumps({"ns": ns, "reached": reached, "root_writable": root_writable, "seccomp": filtered}))
"""


@dataclass(frozen=True, slots=True)
class SandboxProbe:
    available: bool
    backend: str = BACKEND
    path: str = ""
    version: str = ""
    user_ns: bool = False
    pid_ns: bool = False
    net_ns: bool = False
    ipc_ns: bool = False
    uts_ns: bool = False
    network_isolated: bool = False
    seccomp: bool = False
    disable_userns: bool = False
    reason: str = ""
    duration_ms: float = 0.0

    @property
    def launcher(self) -> Launcher:
        return Launcher(self.path, user_ns=self.user_ns, disable_userns=self.disable_userns)

    def to_dict(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "backend": self.backend,
            "path": self.path,
            "version": self.version,
            "user_ns": self.user_ns,
            "pid_ns": self.pid_ns,
            "net_ns": self.net_ns,
            "ipc_ns": self.ipc_ns,
            "uts_ns": self.uts_ns,
            "network_isolated": self.network_isolated,
            "seccomp": self.seccomp,
            "disable_userns": self.disable_userns,
            "reason": self.reason,
            "duration_ms": round(self.duration_ms, 1),
        }


def unavailable(reason: str, **known: Any) -> SandboxProbe:
    return SandboxProbe(available=False, reason=reason, **known)


def _version(text: str) -> tuple[int, ...] | None:
    m = re.fullmatch(r"bubblewrap (\d+)\.(\d+)(?:\.(\d+))?\S*", text.strip())
    if m is None:
        return None
    return tuple(int(g or 0) for g in m.groups())


def _first_line(data: bytes) -> str:
    """A bounded, printable first line of bwrap's complaint, for the reason."""
    line = data.decode("utf-8", "replace").strip().splitlines()[:1]
    text = line[0] if line else ""
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text[:200]


def _boundary(seccomp_fd: int) -> Boundary:
    """What every sandbox is made of: the system surface, the interpreter, the filter."""
    surface = system_surface()
    python = os.path.realpath(sys.executable)
    runtime = os.path.realpath(sys.base_prefix)
    readable = () if surface.shows(python) else (Bind(runtime, BindMode.READ_ONLY),)
    return Boundary(
        system=tuple(Bind(p, BindMode.READ_ONLY) for p in surface.binds),
        links=surface.links,
        readable=readable,
        seccomp_fd=seccomp_fd,
    )


def _run_inside(launcher: Launcher, port: int) -> tuple[dict[str, Any] | None, str]:
    python = os.path.realpath(sys.executable)
    program = seccomp.program()
    seccomp_fd = -1 if program is None else sealed(program, "agent-console-seccomp")
    ptrace = seccomp.number("ptrace") if program is not None else -1
    try:
        argv = bwrap_argv(
            launcher, _boundary(seccomp_fd), "/", (python, "-I", "-S", "-c", _INSIDE, str(port), str(ptrace))
        )
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": DEFAULT_TRUSTED_PATH, "LANG": "C.UTF-8"},
            cwd="/",
            pass_fds=() if seccomp_fd < 0 else (seccomp_fd,),
        )
    except OSError as exc:
        return None, f"the sandbox test did not start: {type(exc).__name__}"
    finally:
        if seccomp_fd >= 0:
            os.close(seccomp_fd)
    return _report(proc)


def _report(proc: subprocess.Popen[bytes]) -> tuple[dict[str, Any] | None, str]:
    try:
        out, err = proc.communicate(timeout=_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None, "the sandbox test did not finish"
    if proc.returncode != 0:
        return None, _first_line(err) or f"the sandbox test exited with {proc.returncode}"
    try:
        report = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "the sandbox test printed no report"
    if not isinstance(report, dict):
        return None, "the sandbox test printed no report"
    return report, ""


def _own_namespaces() -> dict[str, str]:
    out = {}
    for name in _NAMESPACES:
        try:
            out[name] = os.readlink(f"/proc/self/ns/{name}")
        except OSError:
            out[name] = ""
    return out


def probe(bwrap: str = "bwrap") -> SandboxProbe:
    """Check the sandbox for real; never raises, returns ``available=False`` with a reason."""
    start = time.perf_counter()
    result = _probe(bwrap)
    return replace(result, duration_ms=(time.perf_counter() - start) * 1000)


def _probe(bwrap: str) -> SandboxProbe:
    path = bwrap if "/" in bwrap else shutil.which(bwrap, path=DEFAULT_TRUSTED_PATH)
    if path is None or not os.path.isfile(path) or not os.access(path, os.X_OK):
        return unavailable("bwrap not found; install the bubblewrap package")
    path = os.path.realpath(path)
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, timeout=_TIMEOUT_S, check=False, env={}
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return unavailable(f"bwrap --version failed: {type(exc).__name__}", path=path)
    text = done.stdout.decode("utf-8", "replace").strip()
    version = _version(text)
    if done.returncode != 0 or version is None:
        return unavailable("bwrap --version gave no version", path=path)
    version_text = ".".join(map(str, version))
    known: dict[str, Any] = {"path": path, "version": version_text}
    if version < MINIMUM_VERSION:
        minimum = ".".join(map(str, MINIMUM_VERSION))
        return unavailable(f"bubblewrap {version_text} is older than {minimum}", **known)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        launcher = Launcher(path, user_ns=True, disable_userns=version >= DISABLE_USERNS_VERSION)
        report, why = _run_inside(launcher, port)
        if report is None and os.geteuid() == 0:
            # Root can build the other namespaces without a user namespace.
            launcher = Launcher(path, user_ns=False, disable_userns=False)
            report, why = _run_inside(launcher, port)
        if report is None:
            return unavailable(f"namespaces could not be created: {why}", **known)
    finally:
        listener.close()

    own = _own_namespaces()
    inside = report.get("ns", {})
    differs = {n: bool(inside.get(n)) and inside.get(n) != own[n] for n in _NAMESPACES}
    known |= {
        "user_ns": differs["user"],
        "pid_ns": differs["pid"],
        "net_ns": differs["net"],
        "ipc_ns": differs["ipc"],
        "uts_ns": differs["uts"],
        "disable_userns": launcher.disable_userns and differs["user"],
        "network_isolated": differs["net"] and report.get("reached") is False,
        "seccomp": report.get("seccomp") is True,
    }
    if not (differs["pid"] and differs["net"] and differs["ipc"] and differs["uts"]):
        missing = ", ".join(n for n in ("pid", "net", "ipc", "uts") if not differs[n])
        return unavailable(f"namespaces not separated: {missing}", **known)
    if os.geteuid() != 0 and not differs["user"]:
        return unavailable("no user namespace; bwrap cannot isolate without one", **known)
    if not known["network_isolated"]:
        return unavailable("network isolation did not isolate: the host loopback was reachable", **known)
    if report.get("root_writable") is not False:
        return unavailable("the read-only root was writable", **known)
    return SandboxProbe(available=True, **known)
