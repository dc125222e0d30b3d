"""`agent-console demo` in a real terminal (tmux), driven as a new user would drive it.

Keys go in with send-keys and what the terminal shows comes back with capture-pane:
approve, deny, search the history, switch the theme and the keymap, quit — and the demo
must leave no daemon and no state directory behind.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from support.paths import REPO

pytestmark = [
    pytest.mark.programs,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"),
]

ROOT = REPO


def demo_command() -> list[str]:
    return [sys.executable, "-m", "console", "demo", "--pace", "0.3"]


class Tmux:
    def __init__(self) -> None:
        self.socket = f"ac-{uuid.uuid4().hex[:8]}"
        self.session = "demo"

    def run(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        ).stdout

    def start(self, command: list[str]) -> None:
        self.run(
            "new-session",
            "-d",
            "-s",
            self.session,
            "-x",
            "140",
            "-y",
            "45",
            "-c",
            str(ROOT),
            " ".join(command) + "; echo DEMO-EXITED $?; sleep 30",
        )

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", self.session, "-l", text)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session)

    def press_until(self, key: str, text: str, tries: int = 6) -> str:
        """Press ``key`` until ``text`` shows, as a person does when the guard said
        "ignored" because the demo's next arrival redrew the detail just then."""
        for _ in range(tries - 1):
            self.keys(key)
            try:
                return self.wait_for(text, timeout=3.0)
            except AssertionError:
                time.sleep(1.0)
        self.keys(key)
        return self.wait_for(text)

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen()
            if text in shown:
                return shown
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared; the terminal shows:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)


def demo_dir(tmux: Tmux) -> Path:
    """The state directory of the demo running in ``tmux``: its daemon is started with it
    (another suite's demo may run beside it, with its own)."""
    import psutil

    pane = int(tmux.run("list-panes", "-F", "#{pane_pid}").split()[0])
    for proc in psutil.Process(pane).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            for arg in proc.cmdline():
                if arg.startswith("/tmp/acdemo-"):
                    return Path(*Path(arg).parts[:3])
    raise AssertionError("no process of the demo names its directory")


def test_a_new_user_runs_the_demo():
    tmux = Tmux()
    try:
        tmux.start(demo_command())
        tmux.wait_for("pending", timeout=60)
        ours = demo_dir(tmux)
        assert ours.is_dir()
        # The queue puts escalated requests first, oldest first: the new workspace (asked
        # first, and approved only by typing a word) and then `pip install`. Waiting for a
        # name both requests share raced: at times the workspace alone was in, so `j` had
        # nothing to move to and `a` opened the typed confirmation instead.
        tmux.wait_for("pip install", timeout=60)

        # approve: select the second request, give the guard its half second, press a
        tmux.keys("j")
        time.sleep(1.0)
        tmux.press_until("a", "approved once")

        # deny the one now selected
        time.sleep(0.3)
        tmux.press_until("d", "denied once")

        # search the history
        tmux.keys("2")
        tmux.wait_for("matching")
        tmux.keys("/")
        time.sleep(0.3)
        tmux.type("python3")
        tmux.keys("Enter")
        shown = tmux.wait_for("text contains 'python3'")
        assert "operator_approved" in shown or "operator_denied" in shown

        # switch the theme from the command palette
        tmux.keys("C-p")
        time.sleep(0.5)
        tmux.type("Theme: light")
        time.sleep(0.8)
        tmux.keys("Enter")
        tmux.wait_for("theme: light")

        # switch the keymap, and see it in force on the help screen
        tmux.keys("C-p")
        time.sleep(0.5)
        tmux.type("Keymap: vim")
        time.sleep(0.8)
        tmux.keys("Enter")
        tmux.wait_for("keymap: vim")
        tmux.keys("?")
        tmux.wait_for("keymap 'vim'")
        tmux.keys("Escape")
        time.sleep(0.3)

        tmux.keys("q")
        tmux.wait_for("DEMO-EXITED 0", timeout=30)
    finally:
        tmux.kill()
    assert not ours.exists()  # the demo removed its state dir (and stopped its daemon)
