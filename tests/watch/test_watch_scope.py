"""Which directories are skipped, and where protected patterns reach into them."""

from __future__ import annotations

import pytest

from console.policy.config import DEFAULT_PROTECTED
from console.policy.patterns import ProtectedPaths
from console.watch.scope import Scope


def scope(*patterns: str) -> Scope:
    return Scope(ProtectedPaths(patterns or DEFAULT_PROTECTED))


@pytest.mark.parametrize(
    "rel",
    [
        "node_modules",
        "web/node_modules",
        ".venv",
        "venv",
        "src/__pycache__",
        ".mypy_cache",
        "target",
        ".git/objects/ab",
        ".git/logs",
        "sub/.git/objects/ab",
        "dist",
        ".pytest_cache",
    ],
)
def test_heavy_directories_are_skipped_under_the_default_policy(rel):
    assert scope().skips_dir(rel)


@pytest.mark.parametrize(
    "rel",
    [".git", ".git/hooks", ".git/refs", "src", "objects", "logs", "my_node_modules_x", ".git/objects/info"],
)
def test_ordinary_and_git_directories_are_not(rel):
    assert not scope().skips_dir(rel)


def test_wildcard_patterns_do_not_keep_heavy_directories():
    s = scope("**/*.pem", "**/id_rsa*", ".env")
    assert s.skips_dir("node_modules")
    assert s.under_skipped("node_modules/pkg/key.pem")


def test_a_literal_pattern_keeps_only_the_part_it_names():
    s = scope("node_modules/.bin/**", ".venv/bin/activate")
    assert not s.skips_dir("node_modules")
    assert not s.skips_dir("node_modules/.bin")
    assert s.skips_dir("node_modules/left-pad")
    assert s.under_skipped("node_modules/left-pad/lib")
    assert not s.under_skipped("node_modules/.bin/sub")
    assert not s.skips_dir(".venv")
    assert not s.skips_dir(".venv/bin")
    assert s.skips_dir(".venv/lib")
    assert s.skips_dir("web/node_modules")  # anchored at the root only


def test_a_protected_heavy_directory_is_watched_whole():
    s = scope("node_modules")
    assert not s.skips_dir("node_modules")
    assert not s.skips_dir("web/node_modules/x/y")
    assert not s.under_skipped("node_modules/a/b")


def test_a_doublestar_inside_a_named_heavy_directory_reaches_everything_below():
    s = scope("**/node_modules/**/*.node")
    assert not s.skips_dir("a/node_modules")
    assert not s.skips_dir("a/node_modules/x/y")


def test_git_object_store_can_be_protected_explicitly():
    s = scope(".git/objects/info/**")
    assert not s.skips_dir(".git/objects")
    assert not s.skips_dir(".git/objects/info")
    assert s.skips_dir(".git/objects/ab")
