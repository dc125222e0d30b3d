"""Git repositories by shape (console/policy/repository.py): which paths are a
repository's own files, whatever the directory is called."""

from __future__ import annotations

from console.policy.config import DEFAULT_PROTECTED
from console.policy.patterns import ProtectedPaths
from console.policy.repository import REPOSITORY_PATTERN, git_files, is_repository, repository_of


def bare(path):
    (path / "objects").mkdir(parents=True)
    (path / "refs").mkdir()
    (path / "HEAD").write_text("ref: refs/heads/main\n")


def test_head_objects_and_refs_make_a_repository_of_any_directory(tmp_path):
    bare(tmp_path / "docs")
    assert is_repository(str(tmp_path / "docs"))
    for rel in (
        "docs/config",
        "docs/config.worktree",
        "docs/commondir",
        "docs/hooks/pre-commit",
        "docs/info/attributes",
        "docs/objects/info/alternates",
    ):
        assert repository_of(str(tmp_path), rel) == "docs", rel
    for rel in ("docs/README", "docs/refs/heads/main", "docs/info/exclude", "config"):
        assert repository_of(str(tmp_path), rel) is None, rel


def test_a_config_with_core_or_include_is_one_before_the_rest_of_the_shape(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config").write_text("[core]\n\tfsmonitor = evil\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "config").write_text('[includeIf "gitdir:/"]\n\tpath = x\n')
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config").write_text("[app]\nport = 80\n")
    assert repository_of(str(tmp_path), "a/config") == "a"
    assert repository_of(str(tmp_path), "b/config") == "b"
    assert repository_of(str(tmp_path), "c/config") is None


def test_the_workspace_root_itself_can_be_one_and_git_dirs_are_the_patterns(tmp_path):
    bare(tmp_path)
    assert repository_of(str(tmp_path), "config") == ""
    assert repository_of(str(tmp_path), ".git/config") is None  # the patterns' business
    assert git_files(str(tmp_path), "") == []
    (tmp_path / "config").write_text("")
    assert git_files(str(tmp_path), "") == ["config"]


def test_match_in_applies_the_shape_after_the_patterns(tmp_path):
    bare(tmp_path / "docs")
    protected = ProtectedPaths(DEFAULT_PROTECTED)
    assert protected.match_in(str(tmp_path), "docs/config") == REPOSITORY_PATTERN
    assert protected.match_in(str(tmp_path), ".env") == ".env"
    assert protected.match_in(str(tmp_path), "docs/notes.md") is None
    assert ProtectedPaths(DEFAULT_PROTECTED, gitfiles=False).match_in(str(tmp_path), "docs/config") is None
