"""What every test shares: `support` importable, the real daemon as a fixture, the markers.

A test module configures its daemon with module-level constants instead of its own copy
of the fixture:

    DAEMON_POLICY = "approval_timeout_s = 120\\n"   # policy.toml text; None: the daemon's defaults
    DAEMON_ENV = {"TERM": "dumb"}                    # added to the daemon's environment

`daemon` is one daemon for the module (started once: each start is a real process and a
socket); `fresh_daemon` is one per test, for tests that fill, tamper with or kill it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# `from support.daemon import ...` from any test file, however pytest was started.
sys.path.insert(0, str(Path(__file__).parent))

from support.daemon import DaemonProcess, running_daemon

# The console moves its pane prefix off ctrl+b inside tmux; tests run by someone inside
# tmux see the console as anyone else does (a test that runs it in tmux sets its own).
for _name in ("TMUX", "TMUX_PANE"):
    os.environ.pop(_name, None)

DEFAULT_DAEMON_POLICY = "approval_timeout_s = 30\n"

# Hypothesis's per-example deadline is a timed assertion: on a loaded machine an example
# that normally takes 20 ms takes 800, and the test fails for the machine, not the code.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

# Tests with any of these need more than Python and a laptop (sshd: Debian's
# openssh-server; browser: Debian's chromium); `-m "not system"` skips them.
SYSTEM_MARKERS = ("needs_root", "needs_bwrap", "programs", "sshd", "browser", "wheel")


def daemon_config(request: pytest.FixtureRequest) -> tuple[str | None, dict[str, str] | None]:
    """The (policy, env) a test module asks for, by its DAEMON_POLICY and DAEMON_ENV."""
    module = request.module
    return getattr(module, "DAEMON_POLICY", DEFAULT_DAEMON_POLICY), getattr(module, "DAEMON_ENV", None)


@pytest.fixture(scope="module")
def daemon(request: pytest.FixtureRequest) -> Iterator[DaemonProcess]:
    policy, env = daemon_config(request)
    with running_daemon(policy, env=env) as d:
        yield d


@pytest.fixture
def fresh_daemon(request: pytest.FixtureRequest) -> Iterator[DaemonProcess]:
    policy, env = daemon_config(request)
    with running_daemon(policy, env=env) as d:
        yield d


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `system` every test that needs root, bubblewrap or external programs."""
    for item in items:
        if (
            item.get_closest_marker("claude_code") is not None
            or item.get_closest_marker("agents") is not None
        ):
            item.add_marker(pytest.mark.programs)
        if any(item.get_closest_marker(name) is not None for name in SYSTEM_MARKERS):
            item.add_marker(pytest.mark.system)
