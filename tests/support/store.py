"""Shared support for the store tests (no tests here): real SQLite files, real mounts."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from console.store import Event, Store
from console.store.chain import HEAD_SUFFIX

ROOT = Path(__file__).resolve().parent.parent.parent


def acked_then_killed(db: Path, child: str, acks: int) -> dict[int, str]:
    """Run ``child`` (Python source that appends to ``db`` and prints ``<seq> <tag>`` for
    each append it was answered), read ``acks`` answers, then kill -9 it: what it was told
    is written, by seq."""
    proc = subprocess.Popen(
        [sys.executable, "-c", child, str(db)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    acked: dict[int, str] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        seq, tag = line.split()
        acked[int(seq)] = tag
        if len(acked) >= acks:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    return acked


def behind_the_head(database: Path, write: Callable[[Store], object]) -> None:
    """What an attacker who can write the state directory while the daemon is down does:
    ``write`` through the store's own code (rows correctly chained, the meta head moved
    with them), then the old head file put back. The next start flags those rows."""
    head = str(database) + HEAD_SUFFIX
    with open(head, "rb") as f:
        saved = f.read()
    with Store.open(database) as s:
        write(s)
    with open(head, "wb") as f:
        f.write(saved)


def ev(i: int, **kw) -> Event:
    fields = {"kind": "decision", "at": 1_700_000_000.0 + i, "request_id": f"r{i}", "command": f"echo {i}"}
    fields.update(kw)
    return Event(**fields)


def raw(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection, as someone tampering with the file would use."""
    return sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)


def unguard(conn: sqlite3.Connection) -> None:
    """Drop the append-only triggers, as an attacker with the file would."""
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    conn.execute("DROP TRIGGER IF EXISTS events_no_delete")


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A real, small tmpfs mounted at ``where`` (needs root); unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.fail(
            "mounting a tmpfs needs root: run the tests as root (./dev test does, as the README says)"
        )
    done = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where))
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs here (root is needed): {done.stderr.strip()}")
    try:
        yield where
    finally:
        _run("umount", "-l", str(where))


def remount(where: Path, options: str) -> None:
    done = _run("mount", "-o", f"remount,{options}", str(where))
    assert done.returncode == 0, done.stderr


@functools.cache
def immutable_base() -> Path:
    """A short temporary base directory on a filesystem where the immutable flag stops
    writes through a file already open (ext4 does; tmpfs, a common /tmp, does not): the
    live "the kernel refuses to write" fault needs one. Short, for socket paths."""
    for base in ("/tmp", "/var/tmp"):
        probe = Path(tempfile.mkdtemp(prefix="ac-i-", dir=base))
        target = probe / "f"
        try:
            with open(target, "w") as f:
                if _run("chattr", "+i", str(target)).returncode != 0:
                    continue
                try:
                    f.write("x")
                    f.flush()
                except PermissionError:
                    return Path(base)
                finally:
                    _run("chattr", "-i", str(target))
        finally:
            shutil.rmtree(probe, ignore_errors=True)
    pytest.fail("no filesystem under /tmp or /var/tmp enforces chattr +i (root and ext4 are needed)")


def chattr(flag: str, *paths: Path) -> None:
    done = _run("chattr", flag, *map(str, paths))
    if done.returncode != 0:
        pytest.fail(
            f"chattr {flag} failed (root and an ext4-like filesystem are needed): {done.stderr.strip()}"
        )
