"""The checkout's folders, for tests in any folder under tests/ (each package's tests sit
one level below tests/, so a path counted up from a test's own file breaks when it moves)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # tests/support/ is two below the checkout
TESTS = REPO / "tests"
