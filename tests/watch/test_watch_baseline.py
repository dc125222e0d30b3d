"""Baselines of small protected text files, and the diffs against them."""

from __future__ import annotations

import os

from support.watch import watching, workspace, write

from console.watch.baseline import Baselines, read_small_text


async def test_diff_against_the_content_when_first_watched(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws) as (watcher, rec):
        write(ws / ".env", "TOKEN=new\nEXTRA=1\n")
        await rec.wait_path(".env", "modified")
        diff = watcher.baseline_diff(str(ws), ".env")
        assert diff is not None
        assert "--- a/.env" in diff and "+++ b/.env" in diff
        assert "-TOKEN=old\n" in diff and "+TOKEN=new\n" in diff and "+EXTRA=1\n" in diff
        # Cumulative until accepted: a second write does not hide the first.
        write(ws / ".env", "TOKEN=new\nEXTRA=2\n")
        await rec.wait_for(lambda e: e.path == ".env" and e.size == len("TOKEN=new\nEXTRA=2\n"))
        assert "-TOKEN=old\n" in watcher.baseline_diff(str(ws), ".env")
        assert watcher.accept_baseline(str(ws), ".env")
        assert watcher.baseline_diff(str(ws), ".env") == ""


async def test_created_later_has_an_empty_baseline_and_deleted_shows_removal(tmp_path):
    ws = workspace(tmp_path)
    async with watching(ws) as (watcher, rec):
        write(ws / ".git" / "hooks" / "pre-push", "#!/bin/sh\nrm -rf ~\n")
        await rec.wait_path(".git/hooks/pre-push", "added")
        diff = watcher.baseline_diff(str(ws), ".git/hooks/pre-push")
        assert diff is not None and "@@ -0,0 +1,2 @@" in diff and "+rm -rf ~\n" in diff
        os.unlink(ws / ".git" / "config")
        await rec.wait_path(".git/config", "deleted")
        diff = watcher.baseline_diff(str(ws), ".git/config")
        assert diff is not None and "-[core]\n" in diff


async def test_no_baseline_for_unprotected_large_or_binary_files(tmp_path):
    ws = workspace(tmp_path)
    write(ws / "big.pem", "A" * (64 * 1024 + 1))
    (ws / "bin.pem").write_bytes(b"\x00\x01binary")
    async with watching(ws) as (watcher, _rec):
        assert watcher.baseline_diff(str(ws), "src/app.py") is None
        assert watcher.baseline_diff(str(ws), "big.pem") is None
        assert watcher.baseline_diff(str(ws), "bin.pem") is None
        assert watcher.baseline_diff(str(ws), ".env") == ""
        assert watcher.baseline_diff("/not/watched", ".env") is None


def test_reading_never_follows_symlinks_or_blocks_on_fifos(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("outside")
    os.symlink(secret, tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert read_small_text(str(tmp_path / "link")) is None
    assert read_small_text(str(tmp_path / "fifo")) is None
    assert read_small_text(str(secret)) == b"outside"


def test_total_baseline_size_is_bounded(tmp_path):
    for i in range(4):
        (tmp_path / f"f{i}").write_text("x" * 1000)
    b = Baselines(str(tmp_path), total_limit=2500)
    for i in range(4):
        b.take(f"f{i}")
    assert sum(b.has(f"f{i}") for i in range(4)) == 2
    assert b.truncated


def test_diff_marks_a_missing_final_newline(tmp_path):
    (tmp_path / "f").write_text("a\n")
    b = Baselines(str(tmp_path))
    b.take("f")
    (tmp_path / "f").write_text("a\nb")
    assert b.diff("f").endswith("+b\n\\ No newline at end of file\n")
