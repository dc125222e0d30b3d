"""Each way a watcher goes blind, caused for real on a real directory."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from support.paths import REPO
from support.watch import codes, wait_status, watching, workspace, write

from console.contract.outcome import ChangeKind


async def test_non_utf8_name_degrades_and_never_goes_silent(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws, recover_after_s=3600) as (watcher, rec):
        bad = os.fsencode(ws / "src") + b"/caf\xe9-\xff.txt"
        with open(bad, "wb") as f:
            f.write(b"x")
        st = await wait_status(watcher, lambda s: "non_utf8_name" in codes(s), "degraded (non-UTF-8)")
        assert st.roots[0].state == "degraded"
        assert not st.ok
        # The name itself is reported (by the rescan that follows the restart), as data.
        ev = await rec.wait_path(os.fsdecode(b"src/caf\xe9-\xff.txt"), "added")
        assert ev.display_path == "src/caf\\xe9-\\xff.txt"
        assert json.loads(json.dumps(ev.to_dict()))["path_hex"] == b"src/caf\xe9-\xff.txt".hex()
        # Keep touching the bad name while protected files change in the same tree: each
        # batch that holds it is lost to watchfiles, and every protected change still arrives.
        for i in range(5):
            with open(bad, "ab") as f:
                f.write(b"y")
            write(ws / ".git" / "hooks" / f"hook-{i}", "#!/bin/sh\n")
            write(ws / "src" / f"k{i}.pem", "key")
        for i in range(5):
            await rec.wait_path(f".git/hooks/hook-{i}", "added")
            await rec.wait_path(f"src/k{i}.pem", "added")
        assert watcher.status().roots[0].restarts >= 1


async def test_non_utf8_directory_and_recovery_of_status(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws, recover_after_s=0.5) as (watcher, rec):
        bad_dir = os.fsencode(ws) + b"/\xfe\xfd"
        os.mkdir(bad_dir)
        with open(bad_dir + b"/id_rsa", "wb") as f:
            f.write(b"-----BEGIN OPENSSH PRIVATE KEY-----\n")
        key = await rec.wait_path(os.fsdecode(b"\xfe\xfd/id_rsa"), "added")
        assert key.protected == "**/id_rsa*"
        await wait_status(watcher, lambda s: "non_utf8_name" in codes(s), "degraded (non-UTF-8)")
        # Once the bad names stop changing, the root is reported healthy again.
        await wait_status(watcher, lambda s: s.ok, "ok again")
        write(ws / ".env", "TOKEN=after\n")
        await rec.wait_path(".env", "modified")


async def test_a_write_through_a_hard_link_is_found_by_the_rescan(tmp_path):
    # inotify reports a change to the directory the write went through; a write through
    # a second name outside the workspace is invisible to it. The rescan's stat snapshot
    # is what catches it (and every other change the stream cannot see: overflows,
    # batches lost to errors).
    ws = workspace(tmp_path)
    alias = tmp_path / "alias-of-git-config"
    os.link(ws / ".git" / "config", alias)
    async with watching(ws, recover_after_s=3600) as (watcher, rec):
        with open(alias, "a") as f:
            f.write("[core]\n\thooksPath = /tmp/evil\n")
        ev = await rec.wait_path(".git/config", "modified")
        st = await wait_status(watcher, lambda s: "missed_events" in codes(s), "missed_events")
    assert ev.source == "rescan"
    assert ev.protected == ".git/config"
    assert st.roots[0].missed_by_events >= 1
    assert ev.size == os.path.getsize(alias)


async def test_directory_deleted_and_recreated_is_still_watched(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws) as (watcher, rec):
        for _round in range(3):
            shutil.rmtree(ws / "src")
            (ws / "src").mkdir()
            shutil.rmtree(ws / ".git" / "hooks")
            (ws / ".git" / "hooks").mkdir()
        write(ws / "src" / "new.py", "x")
        write(ws / ".git" / "hooks" / "pre-commit", "#!/bin/sh\nevil\n")
        await rec.wait_path("src/app.py", "deleted")
        await rec.wait_path("src/new.py", "added")
        await rec.wait_path(".git/hooks/pre-commit", "added")
        await watcher.flush()
        # Writes long after the recreation still arrive, from the event stream (a rescan
        # would find them too, but only a live watch reports them as "inotify"; on a starved
        # machine one may lose the race to the rescan, not three in a row).
        later, merge = [], []
        for i in range(3):
            write(ws / "src" / "deep" / "er" / f"later{i}.py", "x")
            write(ws / ".git" / "hooks" / f"post-merge-{i}", "#!/bin/sh\n")
            later.append(await rec.wait_path(f"src/deep/er/later{i}.py", "added"))
            merge.append(await rec.wait_path(f".git/hooks/post-merge-{i}", "added"))
    trace = "; ".join(f"{e.seq} {e.kind.value} {e.path} {e.source}" for e in rec.events)
    assert any(e.source == "inotify" for e in later), trace
    assert any(e.source == "inotify" for e in merge), trace
    assert merge[0].protected == ".git/hooks/**"


async def test_a_directory_that_lost_its_watch_unnoticed_is_watched_again(tmp_path, monkeypatch):
    from console.watch.index import TreeIndex

    ws = workspace(tmp_path)
    async with watching(ws, verify_interval_s=0.3) as (watcher, rec):
        # The fault: a watched directory replaced while its events were lost and its inode
        # number reused, so nothing the watcher saw says it changed. The kernel cannot be
        # made to reuse an inode on demand, so the index is told to overlook the change.
        monkeypatch.setattr(TreeIndex, "renew", lambda self, rel: None)
        shutil.rmtree(ws / "src")
        (ws / "src").mkdir()
        write(ws / "src" / "x.txt")
        await rec.wait_path("src/x.txt", "added")
        await watcher.flush()
        monkeypatch.undo()
        # Only the kernel's list of watches shows that src/ is blind; once checked, later
        # writes arrive as events again.
        sources = []
        for i in range(100):
            write(ws / "src" / f"after{i}.txt")
            sources.append((await rec.wait_path(f"src/after{i}.txt", "added")).source)
            if sources[-1] == "inotify":
                break
    assert sources[-1] == "inotify", sources


async def test_symlinks_out_of_the_workspace_are_flagged_and_not_followed(tmp_path):
    ws = workspace(tmp_path)
    outside = tmp_path / "outside"
    write(outside / "secret.txt", "s")
    os.symlink(outside, ws / "src" / "preexisting-link")
    async with watching(ws) as (watcher, rec):
        os.symlink(outside, ws / "src" / "link")
        os.symlink("app.py", ws / "src" / "inner")
        os.symlink("../../../../../../etc/passwd", ws / ".env.local")
        link = await rec.wait_path("src/link", "added")
        inner = await rec.wait_path("src/inner", "added")
        env = await rec.wait_path(".env.local", "added")
        write(outside / "through-the-link.txt", "x")
        write(ws / "src" / "marker.txt", "x")
        await rec.wait_path("src/marker.txt", "added")
        await watcher.flush()
    assert link.symlink_escape and env.symlink_escape
    assert env.protected == ".env.*"
    assert not inner.symlink_escape
    assert not rec.find(lambda e: "through-the-link" in e.path)
    assert not rec.find(lambda e: e.path.startswith(("src/link/", "src/preexisting-link/")))


async def test_root_missing_then_created_then_deleted_then_created(tmp_path):
    root = tmp_path / "later"
    async with watching(root) as (watcher, rec):
        st = watcher.status().roots[0]
        assert st.state == "degraded" and st.mode == "none"
        assert {r.code for r in st.reasons} == {"root_missing"}
        root.mkdir()
        write(root / ".env", "A=1\n")
        await rec.wait_path(".env", "added")
        await wait_status(watcher, lambda s: s.ok, "ok once the root exists")
        write(root / "src" / "a.py", "x")
        await rec.wait_path("src/a.py", "added")
        shutil.rmtree(root)
        await rec.wait_path(".env", "deleted")
        await wait_status(watcher, lambda s: "root_missing" in codes(s), "root_missing")
        root.mkdir()
        write(root / ".git" / "hooks" / "pre-commit", "#!/bin/sh\n")
        hook = await rec.wait_path(".git/hooks/pre-commit", "added")
        await wait_status(watcher, lambda s: s.ok, "ok again")
    assert hook.protected == ".git/hooks/**"


async def test_a_heavy_directory_appearing_later_is_dropped_from_the_watch(tmp_path):
    ws = workspace(tmp_path)
    (ws / "web").mkdir()
    async with watching(ws) as (watcher, rec):
        for i in range(50):
            write(ws / "web" / "node_modules" / f"pkg{i}" / "index.js", "x")
        await watcher.flush()
        for i in range(50):
            write(ws / "web" / "node_modules" / f"pkg{i}" / "index.js", "y")
        write(ws / "web" / ".env.production", "SECRET=1\n")
        ev = await rec.wait_path("web/.env.production", "added")
        await watcher.flush()
    assert ev.protected == ".env.*"
    assert not rec.find(lambda e: e.path.startswith("web/node_modules"))


async def test_a_20000_file_burst_loses_no_protected_change(tmp_path):
    ws = workspace(tmp_path)
    protected: list[str] = []
    async with watching(ws, rescan_interval_s=2.0, settle_s=1.0, debounce_ms=300, step_ms=20) as (
        watcher,
        rec,
    ):
        for d in range(20):
            base = ws / "burst" / f"d{d:02}"
            base.mkdir(parents=True)
            for f in range(1000):
                (base / f"f{f:04}.txt").write_text("x")
                if f % 250 == 125:
                    name = f"burst/d{d:02}/key{f}.pem"
                    (ws / name).write_text("-----BEGIN-----\n")
                    protected.append(name)
            hook = f".git/hooks/h{d:02}"
            write(ws / hook, "#!/bin/sh\n")
            protected.append(hook)
        with open(ws / ".env", "a") as f:
            f.write("DURING=burst\n")
        protected.append(".env")
        for name in protected:
            await rec.wait_path(name)
        write(ws / ".git" / "config", "[after]\n")
        await rec.wait_path(".git/config", "modified")
        await watcher.flush()
    added = {}
    for e in rec.events:
        if e.path.startswith("burst/") and not e.is_dir:
            assert e.kind is not ChangeKind.DELETED, e
            if e.kind is ChangeKind.ADDED:
                assert e.path not in added, f"{e.path} reported added twice"
                added[e.path] = e
    assert len(added) == 20_000 + 80
    assert all(added[p].protected == "**/*.pem" for p in protected if p.endswith(".pem"))


# -- a real queue overflow -------------------------------------------------------------------

OVERFLOW_CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    sys.path.insert(0, sys.argv[1])
    from console.policy.config import PolicyConfig
    from console.watch import Attributions, WorkspaceWatcher

    def emit(obj):
        sys.stdout.write(json.dumps(obj) + "\\n")
        sys.stdout.flush()

    async def main():
        watcher = WorkspaceWatcher(
            protected_for=lambda r: PolicyConfig().protected_paths, attributions=Attributions(),
            on_event=lambda e: emit({"event": e.to_dict()}), on_status=lambda s: None,
            rescan_interval_s=0.3, settle_s=0.2, debounce_ms=100, step_ms=10, verify_interval_s=0.5,
        )
        await watcher.add_root(sys.argv[2])
        emit({"ready": True})
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        emit({"status": watcher.status().to_dict()})
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await watcher.close()

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("replace", ["recreated", "swapped", "swapped-nested"])
def test_a_kernel_queue_overflow_loses_no_protected_change(tmp_path, replace):
    """Stop the watcher's process, make far more changes than the kernel queues for an
    inotify instance (fs.inotify.max_queued_events), protected ones last so that their
    events are surely dropped, and let it run again: the rescan must report them.

    A watched directory is replaced meanwhile: removed and made again ("recreated", whose
    inode number is often reused), or swapped for a directory made beside it ("swapped",
    whose inode number surely differs), or swapped for one whose key sits a directory
    further down ("swapped-nested": the rescan must go into what it had never seen).
    Either way it holds a protected key that only the rescan can report, and it must be
    watched again."""
    import signal

    ws = workspace(tmp_path)
    key = "src/deep/id_rsa" if replace == "swapped-nested" else "src/id_rsa"
    queue_len = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    child = subprocess.Popen(
        [sys.executable, "-c", OVERFLOW_CHILD, str(REPO), str(ws)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert json.loads(child.stdout.readline()) == {"ready": True}
        os.kill(child.pid, signal.SIGSTOP)
        try:
            # Alternating appends are never coalesced: one queued event each, in both the
            # instance watching the root alone and the one watching src/ and .git/hooks/.
            with contextlib.ExitStack() as stack:
                logs = [stack.enter_context(open(ws / d / n, "a")) for d in (".", "src") for n in "ab"]
                for _ in range(queue_len):
                    for f in logs:
                        f.write("x")
                        f.flush()
            with open(ws / ".env", "a") as f:
                f.write("STOLEN=1\n")
            write(ws / ".git" / "hooks" / "pre-commit", "#!/bin/sh\nevil\n")
            # And a watched directory replaced while nobody could say so (its inode number
            # is often reused, so only the kernel's list of watches shows that it is blind).
            if replace == "recreated":
                shutil.rmtree(ws / "src")
                (ws / "src").mkdir()
                write(ws / "src" / "id_rsa", "key")
            else:
                write(ws / "src.new" / key.removeprefix("src/"), "key")
                shutil.rmtree(ws / "src")
                (ws / "src.new").rename(ws / "src")
        finally:
            os.kill(child.pid, signal.SIGCONT)

        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in child.stdout], daemon=True).start()

        def next_line(timeout_s: float = 60.0) -> str:
            line = lines.get(timeout=timeout_s)
            assert line, "the watcher exited early"
            return line

        def next_event(timeout_s: float = 60.0) -> dict:
            return json.loads(next_line(timeout_s))["event"]

        seen: dict[str, dict] = {}
        while len(seen) < 3:
            ev = next_event()
            if ev["path"] in (".env", ".git/hooks/pre-commit", key):
                seen[ev["path"]] = ev
        child.stdin.write("status\n")
        child.stdin.flush()
        while True:
            line = json.loads(next_line())
            if "status" in line:
                status = line["status"]["roots"][0]
                break
        # The replaced directory is watched again: a later write arrives as an event.
        # (A file made in the new directory before it is watched again can be taken into
        # its first scan without an event of its own: the next one is waited for then.)
        sources = []
        for i in range(30):
            write(ws / "src" / f"after{i}.txt")
            try:
                while (ev := next_event(timeout_s=1.5))["path"] != f"src/after{i}.txt":
                    continue  # earlier events of the churn drain first
            except queue.Empty:
                continue
            sources.append(ev["source"])
            if ev["source"] == "inotify":
                break
        child.stdin.close()
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
    assert seen[".env"]["kind"] == "modified"
    assert seen[".git/hooks/pre-commit"]["kind"] == "added"
    assert seen[key]["kind"] == "added"
    assert seen[key]["protected"] == "**/id_rsa*"
    # (The key in src/ may be found by the scan that follows the new watch instead.)
    assert {seen[p]["source"] for p in (".env", ".git/hooks/pre-commit")} == {"rescan"}
    assert "missed_events" in {r["code"] for r in status["reasons"]}
    assert sources, "no write in the replaced src/ was reported, by an event or a rescan"
    assert sources[-1] == "inotify", sources


# -- the inotify watch limit ---------------------------------------------------------------

LIMIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, sys
    sys.path.insert(0, sys.argv[1])
    from console.policy.config import PolicyConfig
    from console.watch import Attributions, WorkspaceWatcher

    ws, when, limit_file = sys.argv[2], sys.argv[3], sys.argv[4]

    def limit(n):
        with open(limit_file, "w") as f:
            f.write(str(n))

    async def wait(pred, what):
        for _ in range(1000):
            got = pred()
            if got:
                return got
            await asyncio.sleep(0.02)
        raise SystemExit(f"timed out waiting for {what}: {watcher.status()}")

    async def main():
        global watcher
        events = []
        watcher = WorkspaceWatcher(
            protected_for=lambda r: PolicyConfig().protected_paths, attributions=Attributions(),
            on_event=events.append, on_status=lambda s: None, rescan_interval_s=0.3, settle_s=0.2,
            debounce_ms=100, step_ms=10, poll_delay_ms=100,
        )
        if when == "start":
            limit(2)
        await watcher.add_root(ws)
        if when == "later":
            limit(1)
            os.makedirs(ws + "/src/new/deeper")
            with open(ws + "/src/new/deeper/file.txt", "w") as f:
                f.write("x")
        await wait(lambda: watcher.status().roots[0].mode == "polling", "polling")
        with open(ws + "/.git/hooks/pre-commit", "w") as f:
            f.write("#!/bin/sh\\n")
        with open(ws + "/src/id_rsa_new", "w") as f:
            f.write("key")
        for path in (".git/hooks/pre-commit", "src/id_rsa_new"):
            ev = await wait(lambda: [e for e in events if e.path == path], path)
            print(json.dumps({"event": ev[0].to_dict()}), flush=True)
        print(json.dumps({"status": watcher.status().to_dict()}), flush=True)
        await watcher.close()

    asyncio.run(main())
    """
)


def _run_with_watch_limit(ws: Path, when: str) -> list[dict]:
    """Run the watcher in a child user namespace whose own inotify watch limit is tiny,
    so nothing else on the machine is affected (per-namespace ucounts, Linux >= 5.11)."""
    unshare = shutil.which("unshare")
    probe = (
        subprocess.run(
            [unshare, "--user", "--map-root-user", "sh", "-c", "echo 5 > /proc/sys/user/max_inotify_watches"],
            capture_output=True,
        )
        if unshare
        else None
    )
    if probe is not None and probe.returncode == 0:
        cmd = [unshare, "--user", "--map-root-user", sys.executable, "-c", LIMIT_SCRIPT]
        limit_file = "/proc/sys/user/max_inotify_watches"
        restore = None
    elif os.geteuid() == 0:
        # No user namespaces here: lower the global limit for the few seconds the child runs.
        cmd = [sys.executable, "-c", LIMIT_SCRIPT]
        limit_file = "/proc/sys/fs/inotify/max_user_watches"
        restore = Path(limit_file).read_text()
    else:
        pytest.fail("needs user namespaces or root to lower the inotify watch limit: run the tests as root")
    try:
        out = subprocess.run(
            [*cmd, str(REPO), str(ws), when, limit_file], capture_output=True, text=True, timeout=90
        )
    finally:
        if restore is not None:
            Path(limit_file).write_text(restore)
    assert out.returncode == 0, out.stderr[-3000:] + out.stdout[-2000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("when", ["start", "later"])
def test_inotify_watch_limit_falls_back_to_polling(tmp_path, when):
    ws = workspace(tmp_path)
    for i in range(10):
        (ws / "src" / f"pkg{i}").mkdir()
    lines = _run_with_watch_limit(ws, when)
    events = [x["event"] for x in lines if "event" in x]
    status = next(x["status"] for x in lines if "status" in x)
    assert [e["path"] for e in events] == [".git/hooks/pre-commit", "src/id_rsa_new"]
    assert all(e["protected"] for e in events)
    assert all(e["source"] in ("poll", "rescan") for e in events)
    root = status["roots"][0]
    assert root["mode"] == "polling" and root["state"] == "degraded"
    assert "watch_limit" in {r["code"] for r in root["reasons"]}
