"""The sweep after a sandboxed run removes the protected names the run left behind; a
directory of the write dir flipped into a symlink meanwhile (to `.git`, or outside the
workspace) made it remove what the link led to: the operator's `.git/hooks/*.sample`
went, in a loaded run of tests/escapes/test_mounts_symlink_flip.py. Nothing is followed
on the way now."""

from __future__ import annotations

import os

from console.sandbox.guards import _remove


def test_a_link_on_the_way_is_not_followed(tmp_path):
    real = tmp_path / "outside" / "hooks"
    real.mkdir(parents=True)
    (real / "applypatch-msg.sample").write_text("#!/bin/sh\n")
    (real / "tree").mkdir()
    (real / "tree" / "kept").write_text("x")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(tmp_path / "outside", ws / "d")
    for name in ("applypatch-msg.sample", "tree"):
        refused = _remove(str(ws / "d" / "hooks" / name), f"d/hooks/{name}")
        assert not refused.removed and "symlink" in refused.why, refused
    assert (real / "applypatch-msg.sample").exists() and (real / "tree" / "kept").exists()


def test_what_the_run_left_is_still_removed(tmp_path):
    hooks = tmp_path / "ws" / "d" / "hooks"
    (hooks / "planted").mkdir(parents=True)
    (hooks / "planted" / "x").write_text("x")
    (hooks / "post-merge").write_text("evil")
    os.symlink("/etc/passwd", hooks / "link")
    for name in ("planted", "post-merge", "link"):
        assert _remove(str(hooks / name), f"d/hooks/{name}").removed
    assert list(hooks.iterdir()) == [] and os.path.exists("/etc/passwd")
