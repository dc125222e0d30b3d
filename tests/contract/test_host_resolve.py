"""OSHost.resolve names every path as os.path.realpath does, missing ones included.

A missing path is resolved from its parent's (cached) answer instead of by realpath's
walk; the content binding keys files by these names, and the sandbox's check resolves
afresh with realpath, so the two must agree or a command is refused as changed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.contract.host import OSHost

# Components a path is made of: directories, files, symlinks of every kind, and names
# that exist nowhere.
NAMES = [
    "d",
    "e",
    "f.py",
    "to_d",
    "to_f",
    "dangling",
    "rel_dangling",
    "loop",
    "missing",
    "pkg",
    "__init__.py",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("resolve")
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "f.py").write_text("x = 1\n")
    (root / "f.py").write_text("x = 2\n")
    (root / "to_d").symlink_to(root / "d")
    (root / "d" / "to_d").symlink_to("..")  # relative, upward
    (root / "to_f").symlink_to("d/f.py")
    (root / "dangling").symlink_to(root / "nowhere" / "deeper")
    (root / "d" / "rel_dangling").symlink_to("../absent")
    (root / "loop").symlink_to("loop")
    return root


paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=5).map("/".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rel=paths)
def test_resolve_agrees_with_realpath(tree: Path, rel: str) -> None:
    path = os.path.normpath(os.path.join(tree, rel))
    fresh = OSHost().resolve(path)
    assert fresh.path == os.path.realpath(path), (rel, fresh)
    assert OSHost._resolve(path) == fresh  # the sandbox's uncached resolution


def test_a_cached_parent_and_a_missing_child_agree_with_realpath(tree: Path) -> None:
    host = OSHost()
    for rel in ["to_d", "to_d/missing", "to_d/pkg/__init__.py", "dangling/x", "d/rel_dangling/y/z", "loop/a"]:
        path = os.path.join(tree, rel)
        assert host.resolve(path).path == os.path.realpath(path), rel


def test_a_missing_path_created_a_moment_later_is_seen(tree: Path, tmp_path: Path) -> None:
    host = OSHost()
    target = tmp_path / "pkg" / "__init__.py"
    assert host.resolve(str(target)).kind == "missing"
    target.parent.mkdir()
    target.write_text("")
    assert host.resolve(str(target)) == (str(target), "file")


def test_a_deeply_missing_path_is_named_without_recursion(tree: Path) -> None:
    # `python -m a.b.c…` makes one candidate path per part; thousands of missing levels
    # must not exhaust the interpreter's recursion limit (realpath walks them in a loop).
    path = os.path.join(tree, "d", *["m"] * 1500, "x.py")
    assert OSHost().resolve(path) == (os.path.realpath(path), "missing")


def _settled(path: Path) -> None:
    """Date a directory's mtime back, as if nothing changed in it lately."""
    old = os.stat(path).st_mtime_ns - 10 * OSHost.SETTLE_NS
    os.utime(path, ns=(old, old))


@pytest.mark.parametrize("made", ["file", "parent dir", "symlink"])
def test_a_missing_path_remembered_is_seen_once_something_appears_there(tmp_path, made):
    host = OSHost()
    target = tmp_path / "pkg" / "__main__.py"
    _settled(tmp_path)
    assert host.resolve(str(target)).kind == "missing"
    assert str(target) in host._absent  # remembered with its anchor
    if made == "file":
        (tmp_path / "pkg").mkdir()
        target.write_text("x\n")
    elif made == "parent dir":
        (tmp_path / "pkg").mkdir()
    else:
        (tmp_path / "pkg").symlink_to(tmp_path)
    host._anchor_seen = None  # a later parse: the anchor is looked at again
    found = host.resolve(str(target))
    expected = os.path.realpath(target)
    assert found.path == expected
    assert found.kind == ("file" if made == "file" else "missing")


def test_a_path_whose_directory_just_changed_is_not_remembered(tmp_path):
    host = OSHost()
    (tmp_path / "other").write_text("")  # the anchor's mtime is now: too fresh to trust
    assert host.resolve(str(tmp_path / "x.py")).kind == "missing"
    assert str(tmp_path / "x.py") not in host._absent
