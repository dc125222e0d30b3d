"""Running one operation through prepare() and the real bwrap, for the escape tests."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from console.contract import OSHost, parse
from console.sandbox import SandboxConfig, prepare, probe

HOST = OSHost()
_probe = None


def sandbox_probe():
    global _probe
    if _probe is None:
        _probe = probe()
        assert _probe.available, f"these tests need a working bwrap: {_probe.reason}"
    return _probe


def config(tmp: Path, home: str | None = None, **kw) -> SandboxConfig:
    base = tmp / "tmpbase"
    base.mkdir(mode=0o700, exist_ok=True)
    env = {"HOME": home or str(tmp / "no-home"), "LANG": "C.UTF-8"}
    return SandboxConfig(temp_base=str(base), inherit_env=env, **kw)


def op(ws: Path, script: str, **fields):
    wire = {
        "kind": "process",
        "executable": "/bin/sh",
        "args": ["-c", script],
        "workspace_root": str(ws),
        "workspace_access": "write",
    }
    wire.update(fields)
    return parse(wire, HOST)


def run(operation, cfg: SandboxConfig, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """prepare() + the real bwrap, as the executor spawns it (pass_fds included)."""
    with prepare(operation, cfg, sandbox_probe()) as ready:
        return spawn(ready, timeout)


def spawn(ready, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Start a prepared command as the executor does: spawn, confirm the mounts, wait.
    Raises SandboxSetupError (after the sandbox was killed) on a mount mismatch, and
    ContentChangedError when bwrap could not mount a pin (its file renamed over)."""
    proc = subprocess.Popen(
        ready.argv,
        env=ready.env,
        cwd=ready.cwd,
        pass_fds=ready.pass_fds,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready.confirm(proc.pid)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode == 1 and not out and (replaced := ready.pin_refused(err.encode())) is not None:
        raise replaced  # as the executor reports it: content changed while it started
    return subprocess.CompletedProcess(ready.argv, proc.returncode, out, err)


def git_workspace(base: Path) -> Path:
    ws = base / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def real_dir(prefix: str) -> Path:
    """A directory outside /tmp (which is private inside the sandbox), so that what the
    sandbox could read or write there is really visible."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))


def listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []
