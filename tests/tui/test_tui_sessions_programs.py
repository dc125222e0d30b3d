"""Full-screen and line-editing programs in a pane, as in a terminal: vim, less, top and a
Python REPL, each driven with keys pressed in the console and checked by what the pane
paints (and, for vim, by the file it wrote)."""

from __future__ import annotations

import shutil
import sys

import pytest
from support.tui import Clock, make_app, until
from support.tui_sessions import BASH, new_session, open_pane, shown, type_line, wait_gone, wait_shown

pytestmark = [pytest.mark.needs_bwrap, pytest.mark.programs]

SIZE = (120, 40)


DAEMON_POLICY = "approval_timeout_s = 120\n"


@pytest.fixture
def clock():
    return Clock()


def need(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        pytest.fail(f"{program} is not installed (the .ci/run image installs it)")
    return path


async def test_vim_edits_a_file_and_the_shell_comes_back(daemon, clock, tmp_path):
    vim = need("vim")
    target = tmp_path / "notes.txt"
    target.write_text("first line\n")
    sid = new_session(daemon, BASH, cwd=str(tmp_path))
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await type_line(pilot, "echo before-vim")
        await wait_shown(pilot, pane, "before-vim")
        await type_line(pilot, f"{vim} -u NONE -N notes.txt")
        await until(pilot, lambda: pane.link.screen.alternate_screen)
        text = await wait_shown(pilot, pane, "first line")
        assert "before-vim" not in text  # the alternate screen hides the shell
        assert text.count("~") >= 10  # vim's empty-line markers down the pane
        # o: open a line below, type, escape (the program's, not the console's), :wq
        await pilot.press("o", *"added in a pane", "escape")
        await wait_shown(pilot, pane, "added in a pane")
        await pilot.press("G", "O", *"above", "escape", "g", "g", "d", "d")
        await wait_gone(pilot, pane, "first line")
        await pilot.press(*":wq", "enter")
        await until(pilot, lambda: not pane.link.screen.alternate_screen)
        await wait_shown(pilot, pane, "before-vim")  # the shell's screen as it was
        assert target.read_text() == "above\nadded in a pane\n"


async def test_less_pages_searches_and_quits(daemon, clock, tmp_path):
    less = need("less")
    (tmp_path / "long.txt").write_text("".join(f"row {i:03d}\n" for i in range(1, 301)))
    sid = new_session(daemon, BASH, cwd=str(tmp_path), LESS="", LESSHISTFILE="-")
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await type_line(pilot, f"{less} long.txt")
        text = await wait_shown(pilot, pane, "row 001")
        assert pane.link.screen.alternate_screen
        rows = pane.link.screen.size[1]
        assert f"row {rows - 1:03d}" in text and f"row {rows + 1:03d}" not in text
        await pilot.press("space")  # next page
        await wait_gone(pilot, pane, "row 001")
        await pilot.press(*"/row 250", "enter")
        await wait_shown(pilot, pane, "row 250")
        await pilot.press("g")  # back to the top
        await wait_shown(pilot, pane, "row 001")
        await pilot.press("q")
        await until(pilot, lambda: not pane.link.screen.alternate_screen)
        await wait_gone(pilot, pane, "row 001")


async def test_top_refreshes_and_quits(daemon, clock):
    top = need("top")
    sid = new_session(daemon, BASH)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await type_line(pilot, f"{top} -d 0.5")
        text = await wait_shown(pilot, pane, "load average")
        assert "PID" in text and "COMMAND" in text
        first = text.split("\n")[0]
        await until(pilot, lambda: shown(pane).split("\n")[0] != first, timeout=10)  # it refreshes
        await pilot.press("q")
        await until(pilot, lambda: not pane.link.screen.alternate_screen)
        await wait_gone(pilot, pane, "load average")


async def test_htop_draws_its_meters_and_quits(daemon, clock):
    htop = need("htop")
    sid = new_session(daemon, BASH)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await type_line(pilot, f"{htop} --no-color -d 5")
        await wait_shown(pilot, pane, "Tasks:")
        text = await wait_shown(pilot, pane, "F10")  # the whole first frame, not just its top
        assert "Mem[" in text and "F10Quit" in text.replace(" ", "")
        await pilot.press("f10")  # a function key, encoded for the program
        await until(pilot, lambda: not pane.link.screen.alternate_screen)
        await wait_gone(pilot, pane, "Tasks:")


async def test_python_repl_with_line_editing(daemon, clock):
    sid = new_session(daemon, [sys.executable, "-q"], PYTHON_BASIC_REPL="1")
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await wait_shown(pilot, pane, ">>>")
        await type_line(pilot, "6 * 7")
        await wait_shown(pilot, pane, "42")
        # readline: up recalls the line, ctrl+a goes to its start, ctrl+e to its end
        await pilot.press("up", "ctrl+a", *"print(", "ctrl+e", *" + 1)", "enter")
        await wait_shown(pilot, pane, "43")
        await type_line(pilot, "for i in range(3):")
        await wait_shown(pilot, pane, "...")
        await pilot.press("tab", *"print('loop', i)", "enter", "enter")
        await wait_shown(pilot, pane, "loop 2")
        await pilot.press("ctrl+d")
        await until(pilot, lambda: pane.ended)
