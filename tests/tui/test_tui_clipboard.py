"""Copy says where the text went, against a real tmux server."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from console.tui.clipboard import deliver

pytestmark = pytest.mark.programs


@pytest.fixture
def tmux_env():
    name = f"ac-{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "-L", name, "-f", "/dev/null", "new-session", "-d", "-s", "t"], check=True)
    try:
        path = subprocess.run(
            ["tmux", "-L", name, "display-message", "-p", "#{socket_path},#{pid},0"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        yield name, {**os.environ, "TMUX": path}
    finally:
        subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True)


def buffer(name: str) -> str:
    return subprocess.run(["tmux", "-L", name, "show-buffer"], capture_output=True, text=True).stdout


async def test_inside_tmux_with_its_default_the_text_lands_in_tmuxs_buffer_and_says_so(tmux_env):
    name, env = tmux_env
    subprocess.run(["tmux", "-L", name, "set-option", "-g", "set-clipboard", "external"], check=True)
    got = await deliver("copied text", osc52_sent=True, env=env)
    assert got.ok and "tmux's paste buffer" in got.where and "OSC 52 was dropped" in got.where
    assert buffer(name) == "copied text"


async def test_inside_tmux_with_set_clipboard_on_it_does_not_claim_a_drop(tmux_env):
    name, env = tmux_env
    subprocess.run(["tmux", "-L", name, "set-option", "-g", "set-clipboard", "on"], check=True)
    got = await deliver("x", osc52_sent=True, env=env)
    assert got.ok and "dropped" not in got.where


async def test_outside_tmux_it_says_the_terminal_must_allow_osc52():
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    got = await deliver("x", osc52_sent=True, env=env)
    assert got.ok and "OSC 52" in got.where and "must allow" in got.where


async def test_a_tmux_that_cannot_be_reached_is_not_copied():
    env = {**os.environ, "TMUX": "/nonexistent/socket,1,0"}
    got = await deliver("x", osc52_sent=True, env=env)
    assert not got.ok and got.where.startswith("nowhere")
