"""The stat index without the event stream: plans, rescans, judging raw batches."""

from __future__ import annotations

import os
import shutil

import pytest
from support.watch import workspace, write

from console.contract.outcome import ChangeKind
from console.policy.config import DEFAULT_PROTECTED
from console.policy.patterns import ProtectedPaths
from console.watch.baseline import Baselines
from console.watch.index import RAW_ADDED, RAW_DELETED, RAW_MODIFIED, TreeIndex
from console.watch.scope import Scope


def index_of(root) -> TreeIndex:
    idx = TreeIndex(str(root), Scope(ProtectedPaths(DEFAULT_PROTECTED)), Baselines(str(root)))
    assert idx.build(report=False, out=[], source="rescan")
    return idx


def test_plan_watches_skipped_and_symlinked_trees_never(tmp_path):
    ws = workspace(tmp_path)
    write(ws / "web" / "app" / "main.ts")
    write(ws / "web" / "node_modules" / "x" / "i.js")
    os.symlink("/", ws / "docs-link")
    plan = index_of(ws).plan()
    # Directories with something excluded below are watched alone (.git/objects: for its
    # info/alternates, which is protected; its object directories stay skipped)...
    assert set(plan.alone) == {"", ".git", ".git/objects", "web"}
    # ...and every other subtree whole.
    assert set(plan.whole) == {".git/hooks", ".git/refs", "src", "web/app"}


def test_a_tree_without_heavy_parts_is_one_recursive_watch(tmp_path):
    write(tmp_path / "a" / "b.txt")
    assert index_of(tmp_path).plan().whole == ("",)


def test_rescan_finds_what_no_event_reported(tmp_path):
    ws = workspace(tmp_path)
    idx = index_of(ws)
    write(ws / ".git" / "hooks" / "pre-commit", "#!/bin/sh\n")
    write(ws / "src" / "pkg" / "deep" / "id_rsa", "key")
    os.unlink(ws / "src" / "app.py")
    with open(ws / ".env", "a") as f:
        f.write("MORE=1\n")
    out = []
    idx.rescan(out)
    got = {(r.path, r.kind) for r in out}
    assert (".git/hooks/pre-commit", ChangeKind.ADDED) in got
    assert ("src/pkg/deep/id_rsa", ChangeKind.ADDED) in got
    assert ("src/app.py", ChangeKind.DELETED) in got
    assert (".env", ChangeKind.MODIFIED) in got
    assert all(r.source == "rescan" for r in out)
    again = []
    idx.rescan(again)
    assert again == []  # idempotent: the index now holds the new state


@pytest.mark.parametrize("young_first", [False, True])
def test_rescan_finds_a_directory_replaced_by_another(tmp_path, young_first):
    # Swapped for a directory made beside it, src/ has a new inode under the same name:
    # its parent's listing cannot tell, so the rescan must look inside it, and give it a
    # new generation so that the worker watches it again (the old watch died with it).
    # A rescan that finds it all too young to report renews it still, and the next one
    # reports everything.
    ws = workspace(tmp_path)
    idx = index_of(ws)
    gen = idx.dirs["src"].gen
    write(ws / "src.new" / "id_rsa", "key")
    write(ws / "src.new" / "pkg" / "mod.py")
    shutil.rmtree(ws / "src")
    (ws / "src.new").rename(ws / "src")
    write(ws / "hooks.new" / "pre-commit", "#!/bin/sh\nevil\n")
    shutil.rmtree(ws / ".git" / "hooks")
    (ws / "hooks.new").rename(ws / ".git" / "hooks")
    out = []
    if young_first:
        idx.rescan(out, young=0.0)  # everything counts as young
        assert out == []
        assert idx.dirs["src"].gen != gen
    idx.rescan(out)
    got = {(r.path, r.kind) for r in out}
    assert (".git/hooks", ChangeKind.MODIFIED) in got
    assert (".git/hooks/pre-commit", ChangeKind.ADDED) in got
    assert (".git/hooks/pre-commit.sample", ChangeKind.DELETED) in got
    assert ("src/id_rsa", ChangeKind.ADDED) in got
    assert ("src/pkg/mod.py", ChangeKind.ADDED) in got
    assert ("src/app.py", ChangeKind.DELETED) in got
    assert next(r for r in out if r.path == "src/id_rsa").protected == "**/id_rsa*"
    assert idx.dirs["src"].gen != gen
    assert idx.dirs["src"].ino == os.lstat(ws / "src").st_ino
    again = []
    idx.rescan(again)
    assert again == []


def test_young_changes_are_left_to_the_event_stream(tmp_path):
    ws = workspace(tmp_path)
    idx = index_of(ws)
    write(ws / "src" / "fresh.txt")
    out = []
    idx.rescan(out, young=0.0)  # everything counts as young
    assert out == []
    idx.rescan(out)
    assert [(r.path, r.kind) for r in out] == [("src/fresh.txt", ChangeKind.ADDED)]


def test_a_raw_event_after_a_rescan_report_is_not_reported_twice(tmp_path):
    ws = workspace(tmp_path)
    idx = index_of(ws)
    write(ws / "src" / "new.txt")
    out = []
    idx.rescan(out)
    assert len(out) == 1
    late = []
    idx.apply_raw({(RAW_ADDED, str(ws / "src" / "new.txt"))}, "inotify", late)
    assert late == []
    write(ws / "src" / "new.txt", "changed")
    idx.apply_raw({(RAW_MODIFIED, str(ws / "src" / "new.txt"))}, "inotify", late)
    assert [(r.path, r.kind) for r in late] == [("src/new.txt", ChangeKind.MODIFIED)]


def test_events_below_an_unknown_directory_report_the_whole_new_tree(tmp_path):
    ws = workspace(tmp_path)
    idx = index_of(ws)
    write(ws / "new" / "a" / "b" / "server.pem", "k")
    write(ws / "new" / "a" / "c.txt")
    out = []
    # Only the deepest event arrived (its parents' were lost): the tree is still found.
    idx.apply_raw({(RAW_ADDED, str(ws / "new" / "a" / "b" / "server.pem"))}, "inotify", out)
    got = {(r.path, r.kind, r.protected) for r in out}
    assert ("new/a/b/server.pem", ChangeKind.ADDED, "**/*.pem") in got
    assert ("new/a/c.txt", ChangeKind.ADDED, None) in got
    assert ("new", ChangeKind.ADDED, None) in got


def test_unknown_deletions_and_paths_outside_the_root_are_ignored(tmp_path):
    ws = workspace(tmp_path)
    idx = index_of(ws)
    out = []
    idx.apply_raw(
        {
            (RAW_DELETED, str(ws / "src" / "never-existed.txt")),
            (RAW_ADDED, str(tmp_path / "elsewhere")),
            (RAW_ADDED, str(ws) + "-sibling/x"),
        },
        "inotify",
        out,
    )
    assert out == []
