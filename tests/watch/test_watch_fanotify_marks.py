"""The fast lane's marks, on the real kernel: a mark is removed from the directory it was
put on, never from wherever a path leads by the time it is removed."""

from __future__ import annotations

import os
import select
from pathlib import Path

import pytest

from console.watch import fanotify

pytestmark = pytest.mark.skipif(not fanotify.available(), reason="fanotify needs CAP_SYS_ADMIN")


def names_seen(group: int, wait_s: float = 2.0) -> list[str]:
    poller = select.poll()
    poller.register(group, select.POLLIN)
    seen: list[str] = []
    while poller.poll(int(wait_s * 1000)):
        try:
            seen += [e.name for e in fanotify.read_names(os.read(group, 64 * 1024))]
        except BlockingIOError:
            break
        wait_s = 0.2
    return seen


def test_removing_a_mark_by_a_path_swapped_for_a_link_leaves_the_links_target_marked(tmp_path: Path):
    """A directory the lane forgets may have been swapped for a symlink meanwhile (renamed
    away, a link put in its place). Removing its mark by that path must not follow the
    link: that would unmark the link's target, another watched directory (`src/`, say),
    and blind the lane there."""
    group = fanotify.init(fanotify.FAN_REPORT_DFID_NAME | fanotify.FAN_UNLIMITED_QUEUE)
    assert group >= 0
    try:
        kept, gone = tmp_path / "kept", tmp_path / "gone"
        kept.mkdir()
        gone.mkdir()
        assert fanotify.mark(group, str(kept), fanotify.DEEP_MASK)
        assert fanotify.mark(group, str(gone), fanotify.DEEP_MASK)
        gone.rename(tmp_path / "gone.real")
        gone.symlink_to(kept)
        fanotify.mark(group, str(gone), fanotify.DEEP_MASK, remove=True)
        names_seen(group, 0.2)
        (kept / "planted").write_text("")
        assert "planted" in names_seen(group)
    finally:
        os.close(group)
