"""Private temp roots: created private, removed only while still the directory created."""

from __future__ import annotations

import os
import stat

import pytest

from console.sandbox.tempdir import PrivateTempRoot, TempRootError, sweep


@pytest.fixture
def base(tmp_path):
    d = tmp_path / "base"
    d.mkdir(mode=0o700)
    return d


def test_created_private_with_its_subdirectories(base):
    root = PrivateTempRoot(str(base))
    st = os.lstat(root.path)
    assert stat.S_ISDIR(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o700
    assert st.st_uid == os.geteuid()
    assert os.listdir(root.path) == ["tmp"]
    assert root.tmp == os.path.join(root.path, "tmp")
    assert root.close()
    assert not os.path.exists(root.path)
    assert root.close()  # idempotent


def test_two_roots_are_distinct(base):
    with PrivateTempRoot(str(base)) as a, PrivateTempRoot(str(base)) as b:
        assert a.path != b.path
    assert os.listdir(base) == []


def test_removes_what_a_command_left_without_following_its_links(base, tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep").write_text("keep")
    root = PrivateTempRoot(str(base))
    tmp = root.tmp
    os.symlink(precious, os.path.join(tmp, "link-to-dir"))
    os.symlink(precious / "keep", os.path.join(tmp, "link-to-file"))
    locked = os.path.join(tmp, "locked")
    os.makedirs(os.path.join(locked, "inner"))
    open(os.path.join(locked, "inner", "f"), "w").close()
    os.chmod(os.path.join(locked, "inner"), 0)
    os.chmod(locked, 0)
    assert root.close()
    assert not os.path.exists(root.path)
    assert (precious / "keep").read_text() == "keep"


def test_swapped_in_symlink_is_not_followed(base, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "precious").write_text("do not delete")
    root = PrivateTempRoot(str(base))
    os.rename(root.path, str(base / "moved-away"))
    os.symlink(target, root.path)
    assert root.close() is False
    assert (target / "precious").read_text() == "do not delete"
    assert os.path.islink(root.path)
    assert root.close() is False  # stays refused


def test_replaced_directory_is_left_alone(base):
    root = PrivateTempRoot(str(base))
    os.rename(root.path, str(base / "moved-away"))
    os.mkdir(root.path)
    (base / os.path.basename(root.path) / "theirs").write_text("theirs")
    assert root.close() is False
    assert os.path.exists(os.path.join(root.path, "theirs"))


def test_already_removed_is_fine(base):
    root = PrivateTempRoot(str(base))
    os.rmdir(root.tmp)
    os.rmdir(root.path)
    assert root.close()


def test_unsafe_bases_are_refused(tmp_path):
    with pytest.raises(TempRootError, match="absolute"):
        PrivateTempRoot("relative/dir")
    (tmp_path / "file").write_text("")
    with pytest.raises(TempRootError, match="not a directory"):
        PrivateTempRoot(str(tmp_path / "file"))
    with pytest.raises(TempRootError):
        PrivateTempRoot(str(tmp_path / "missing"))
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(TempRootError, match="sticky"):
        PrivateTempRoot(str(shared))
    shared.chmod(0o1777)
    PrivateTempRoot(str(shared)).close()


def test_sweep_removes_only_leftover_roots(base, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "precious").write_text("keep")
    left = PrivateTempRoot(str(base))
    os.mkdir(os.path.join(left.path, "cache"))
    open(os.path.join(left.path, "cache", "blob"), "w").close()
    os.symlink(target, base / "agent-console-run-symlinked")
    (base / "agent-console-run-file").write_text("")
    (base / "unrelated").mkdir()
    assert sweep(str(base)) == 1
    assert sorted(os.listdir(base)) == ["agent-console-run-file", "agent-console-run-symlinked", "unrelated"]
    assert (target / "precious").read_text() == "keep"
