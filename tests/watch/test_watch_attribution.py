"""Attribution: which sessions and operations were active when a change happened."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest
from support.watch import watching, workspace, write

from console.watch import Attributions

# A stand-in for an agent's session: waits for a line on stdin, then writes a file.
WRITER = "import sys; target = sys.stdin.readline().strip(); open(target, 'w').write('by ' + sys.argv[1])"


def spawn(cwd, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WRITER, name], cwd=cwd, stdin=subprocess.PIPE, text=True)


def go(proc: subprocess.Popen[str], target: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(target + "\n")
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


async def test_two_sessions_in_two_workspaces(tmp_path):
    a, b = workspace(tmp_path, "a"), workspace(tmp_path, "b")
    attributions = Attributions()
    async with watching(a, b, attributions=attributions) as (_watcher, rec):
        pa, pb = spawn(a, "alpha"), spawn(b, "beta")
        ta = attributions.begin(str(a), "session", "s-alpha", "alpha shell", pa.pid)
        tb = attributions.begin(str(b), "session", "s-beta", "beta shell", pb.pid)
        go(pa, ".git/hooks/pre-commit")
        go(pb, ".env")
        ea = await rec.wait_for(lambda e: e.workspace_root == str(a) and e.path == ".git/hooks/pre-commit")
        eb = await rec.wait_for(lambda e: e.workspace_root == str(b) and e.path == ".env")
        attributions.end(ta)
        attributions.end(tb)
    assert [(x.id, x.pid, x.kind) for x in ea.attribution] == [("s-alpha", pa.pid, "session")]
    assert [(x.id, x.pid) for x in eb.attribution] == [("s-beta", pb.pid)]
    assert ea.to_dict()["attribution"][0]["label"] == "alpha shell"


async def test_two_sessions_in_one_workspace_both_get_the_change(tmp_path):
    ws = workspace(tmp_path)
    attributions = Attributions()
    async with watching(ws, attributions=attributions) as (_watcher, rec):
        p1, p2 = spawn(ws, "one"), spawn(ws, "two")
        attributions.begin(str(ws), "session", "s1", "one", p1.pid)
        attributions.begin(str(ws), "session", "s2", "two", p2.pid)
        op = attributions.begin(str(ws / "src"), "operation", "op-7", "pytest", None)
        go(p1, ".git/config")
        go(p2, "src/app.py")
        e1 = await rec.wait_path(".git/config", "modified")
        e2 = await rec.wait_path("src/app.py", "modified")
        attributions.end(op)
    assert {x.id for x in e1.attribution} == {"s1", "s2", "op-7"}
    assert {x.id for x in e2.attribution} == {"s1", "s2", "op-7"}


async def test_a_change_after_the_session_ended_is_unattributed(tmp_path):
    ws = workspace(tmp_path)
    attributions = Attributions(late_s=0.1)
    async with watching(ws, attributions=attributions) as (_watcher, rec):
        proc = spawn(ws, "short")
        token = attributions.begin(str(ws), "session", "s-short", "short", proc.pid)
        go(proc, "src/during.txt")
        during = await rec.wait_path("src/during.txt", "added")
        attributions.end(token)
        await asyncio.sleep(0.3)
        write(ws / ".env", "TOKEN=later\n")
        later = await rec.wait_path(".env", "modified")
    assert [x.id for x in during.attribution] == ["s-short"]
    assert later.attribution == ()


def test_time_windows_and_workspace_overlap():
    attrs = Attributions(keep_ended_s=100, early_s=0.05, late_s=0.25)
    t = attrs.begin("/w", "session", "s", "s", 42, at=100.0)
    attrs.begin("/w/sub", "operation", "o", "o", None, at=100.0)
    attrs.begin("/other", "session", "x", "x", None, at=100.0)
    attrs.begin("/w2", "session", "prefix-not-parent", "p", None, at=100.0)
    assert {a.id for a in attrs.at("/w", "f", 150.0)} == {"s", "o"}
    assert {a.id for a in attrs.at("/w/sub/deeper", "f", 150.0)} == {"s", "o"}
    assert attrs.at("/w", "f", 99.0) == ()
    assert {a.id for a in attrs.at("/w", "f", 99.97)} == {"s", "o"}  # ctime lags a tick
    attrs.end(t, at=200.0)
    assert {a.id for a in attrs.at("/w", "f", 200.2)} == {"s", "o"}
    assert {a.id for a in attrs.at("/w", "f", 201.0)} == {"o"}
    assert [a.id for a in attrs.active("/w")] == ["o"]


def test_ended_entries_are_forgotten_after_a_while():
    attrs = Attributions(keep_ended_s=0.0)
    t = attrs.begin("/w", "session", "s", "s", None, at=time.time() - 10)
    attrs.end(t, at=time.time() - 5)
    attrs.begin("/w", "session", "fresh", "f", None)
    assert [a.id for a in attrs.at("/w", "f", time.time() - 6)] == []


@pytest.mark.parametrize(
    ("root", "kind", "ident", "pid"),
    [
        ("relative", "session", "s", None),
        ("/w", "daemon", "s", None),
        ("/w", "session", "", None),
        ("/w", "session", "s", 0),
        ("/w", "session", "s", True),
    ],
)
def test_bad_registrations_are_refused(root, kind, ident, pid):
    with pytest.raises(ValueError):  # noqa: PT011
        Attributions().begin(root, kind, ident, "label", pid)
