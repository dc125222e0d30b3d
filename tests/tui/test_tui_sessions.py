"""Terminal panes in the real console: a real daemon, real PTYs, real programs, keys pressed
in the app. Each test checks what the pane paints and, where it matters, what the
program received or what the daemon holds."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
from support.daemon import workspace
from support.tui import (
    Agent,
    Clock,
    foreign_controls,
    frame,
    make_app,
    pending_with,
    screen_text,
    select,
    tagged,
    until,
)
from support.tui_sessions import (
    BASH,
    new_session,
    open_pane,
    prefix,
    sessions_screen,
    show_sessions,
    shown,
    type_line,
    wait_shown,
)
from textual import events

from console.client import RPCError
from console.protocol.jsonrpc import BUSY
from console.tui.screens.prompts import ConfirmPrompt

pytestmark = pytest.mark.needs_bwrap

SIZE = (120, 40)


DAEMON_POLICY = "approval_timeout_s = 120\n"


@pytest.fixture
def clock():
    return Clock()


def capture(daemon, sid: str, scrollback: bool = False) -> str:
    with daemon.operator() as op:
        return op.call("sessions.screen", {"session": sid, "scrollback": scrollback})["text"]


def info(daemon, sid: str) -> dict:
    with daemon.operator() as op:
        return op.call("sessions.get", {"session": sid})["session"]


async def test_output_input_and_resize_round_trip(daemon, clock):
    sid = new_session(daemon, BASH, title="round trip")
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await type_line(pilot, "echo out-$((6*7)); stty size")
        w, h = pane.size.width, pane.size.height
        await wait_shown(pilot, pane, f"{h} {w}")
        assert "out-42" in shown(pane)
        # the daemon's screen and the pane's agree
        assert "out-42" in capture(daemon, sid)
        assert info(daemon, sid)["cols"] == w
        # the terminal shrinks: the pane, the PTY and the program follow
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: pane.size.width < w)
        await until(pilot, lambda: pane.link.screen.size == (pane.size.width, pane.size.height))
        await type_line(pilot, "clear; stty size")
        await wait_shown(pilot, pane, f"{pane.size.height} {pane.size.width}")
        assert (info(daemon, sid)["cols"], info(daemon, sid)["rows"]) == (pane.size.width, pane.size.height)
        # ctrl+c interrupts the program (the console does not take it)
        await type_line(pilot, "sleep 600; echo not-interrupted")
        await pilot.pause(0.3)
        await pilot.press("ctrl+c")
        await type_line(pilot, "echo interrupted-$?")
        await wait_shown(pilot, pane, "interrupted-130")
        assert "not-interrupted" not in shown(pane).replace("echo not-interrupted", "")


async def test_control_alt_and_function_keys_reach_the_program(daemon, clock):
    sid = new_session(daemon, ["cat", "-v"])
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        # ctrl+p and ctrl+q are the app's (palette, quit) elsewhere; here they are the program's
        # (ctrl+q is XON: the PTY's flow control takes it, as in any terminal)
        await pilot.press(
            "ctrl+p", "ctrl+q", "alt+x", "f5", "up", "shift+up", "ctrl+right", "ctrl+_", "enter"
        )
        text = await wait_shown(pilot, pane, "^[[1;5C^_\n^P")
        assert text.split("\n")[-1] == "^P^[x^[[15~^[[A^[[1;2A^[[1;5C^_"
        assert app.screen is sessions_screen(app)  # no palette opened, the app did not quit
        # the prefix twice sends it
        await pilot.press("ctrl+b", "ctrl+b", "enter")
        await wait_shown(pilot, pane, "^B")


async def test_the_footer_says_what_reaches_the_console_from_a_pane(daemon, clock):
    """While a pane takes every key, q goes to its program: the footer's fixed cell says
    the prefix first (it said "q quit", which typed a q into the program)."""
    sid = new_session(daemon, BASH)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        assert pane.takes_every_key
        await until(
            pilot, lambda: "ctrl+b q quit" in screen_text(app).splitlines()[-1].replace("^b", "ctrl+b")
        )
        await pilot.press("ctrl+b", "s")  # back to the list: q is the console's again
        await until(pilot, lambda: not getattr(app.focused, "takes_every_key", False))
        await until(
            pilot, lambda: "ctrl+b q" not in screen_text(app).splitlines()[-1].replace("^b", "ctrl+b")
        )
        assert " q quit" in screen_text(app).splitlines()[-1]


async def test_prefix_then_app_keys_and_help(daemon, clock):
    sid = new_session(daemon, BASH)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await pilot.press("1")  # typed into the shell, not a view switch
        await wait_shown(pilot, pane, "$ 1")
        assert app.current_mode == "sessions"
        await prefix(pilot, "1")
        await until(pilot, lambda: app.current_mode == "queue")
        await pilot.press("4")
        await until(pilot, lambda: app.current_mode == "sessions")
        assert sessions_screen(app).focused_pane() is pane
        await pilot.press("ctrl+b")
        assert pane.armed
        assert "split right" in screen_text(app)  # the status line lists what may follow
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen")
        with app.console.capture() as captured:
            app.console.print(app.screen.render_help())
        assert "pane-prefix" in captured.get() and "^b" in captured.get()


async def test_split_focus_zoom_and_close_detaches(daemon, clock):
    # A split starts a confined shell in the first one's directory: a workspace.
    sid = new_session(daemon, BASH, cwd=str(workspace()), title="first")
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = sessions_screen(app)
        first = await open_pane(pilot, app, sid)
        await prefix(pilot, "percent_sign")  # a new shell beside it
        await until(pilot, lambda: len(screen.layout_tree.panes()) == 2)
        second = await until(
            pilot, lambda: screen.focused_pane() not in (None, first) and screen.focused_pane()
        )
        await until(pilot, lambda: second.link.state == "live")
        r1, r2 = screen.area.frame_for(first.state).region, screen.area.frame_for(second.state).region
        assert r2.x > r1.x and r1.y == r2.y  # side by side
        await type_line(pilot, "echo in-the-second")
        await wait_shown(pilot, second, "in-the-second")
        assert "in-the-second" not in shown(first)
        await prefix(pilot, "quotation_mark")  # and one below the second
        await until(pilot, lambda: len(screen.layout_tree.panes()) == 3)
        third = await until(
            pilot, lambda: screen.focused_pane() not in (None, first, second) and screen.focused_pane()
        )
        r2, r3 = screen.area.frame_for(second.state).region, screen.area.frame_for(third.state).region
        assert r3.y > r2.y and r3.x == r2.x
        # move focus by direction and in order
        await prefix(pilot, "up")
        assert screen.focused_pane().state is second.state
        await prefix(pilot, "left")
        assert screen.focused_pane().state is first.state
        await prefix(pilot, "o")
        assert screen.focused_pane().state is second.state
        # zoom and back
        await prefix(pilot, "z")
        frame = screen.area.frame_for(second.state)
        await until(pilot, lambda: screen.maximized is frame)
        await until(pilot, lambda: frame.region.width >= SIZE[0] - 1)
        await prefix(pilot, "z")
        await until(pilot, lambda: screen.maximized is None)
        # close = detach: the session keeps running
        second_sid = second.state.session_id
        await prefix(pilot, "d")
        await until(pilot, lambda: len(screen.layout_tree.panes()) == 2)
        assert second.state not in screen.layout_tree.panes()
        assert info(daemon, second_sid)["status"] in ("running", "idle")
        assert "keeps running" in screen_text(app)
    # quitting detaches every pane; nothing is killed
    assert info(daemon, sid)["status"] in ("running", "idle")
    assert info(daemon, second_sid)["status"] in ("running", "idle")


async def test_scrollback_with_keys_and_wheel_and_search(daemon, clock):
    sid = new_session(daemon, BASH)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await type_line(pilot, "seq -f 'line-%04g' 1 600")
        await wait_shown(pilot, pane, "line-0600")
        assert "line-0100" not in shown(pane)
        await pilot.press("shift+pageup")
        assert pane.state.scrolling
        await until(pilot, lambda: "line-0600" not in shown(pane))
        assert "scrolled back" in screen_text(app)  # the pane's title bar says so
        await pilot.press("escape")  # back to the program
        await until(pilot, lambda: "line-0600" in shown(pane) and not pane.state.scrolling)
        # the wheel scrolls back when the program does not want the mouse
        await pilot.mouse_down(pane, offset=(5, 5))
        await pilot.mouse_up(pane, offset=(5, 5))
        for _ in range(5):
            pane.post_message(events.MouseScrollUp(pane, 5, 5, 0, 0, 0, False, False, False))
        await until(pilot, lambda: "line-0600" not in shown(pane))
        assert pane.state.scrolling
        await pilot.press("end")
        await until(pilot, lambda: "line-0600" in shown(pane))
        await pilot.press("q")
        await until(pilot, lambda: not pane.state.scrolling)
        # search: the newest hit first, n goes to older ones
        await prefix(pilot, "slash")
        await until(pilot, lambda: type(app.screen).__name__ == "TextPrompt")
        await pilot.press(*"line-0123", "enter")
        await until(pilot, lambda: pane.state.matches)
        await wait_shown(pilot, pane, "line-0123")
        assert "line-0600" not in shown(pane)
        assert len(pane.state.matches) >= 1
        await type_line(pilot, "echo after-search")  # any other key returns to the program
        await wait_shown(pilot, pane, "after-search")
        assert not pane.state.scrolling


async def test_paste_is_bracketed_and_unsafe_paste_asks_first(daemon, clock):
    sid = new_session(daemon, ["cat", "-v"])
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        pane.post_message(events.Paste("one-line"))
        await wait_shown(pilot, pane, "one-line")
        # cat does not use bracketed paste: two lines would run as they arrive, so it asks
        pane.post_message(events.Paste("first\nsecond\x1b[201~"))
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
        await until(pilot, lambda: "second" in screen_text(app) and "\\e[201~" in screen_text(app))
        await pilot.press("y")
        await wait_shown(pilot, pane, "second")
        text = shown(pane)
        assert "^[[201~" not in text  # the end marker was neutralised, ESC never sent
    # a shell that uses bracketed paste gets it bracketed, without asking
    sid2 = new_session(daemon, BASH)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid2)
        await type_line(pilot, "bind 'set enable-bracketed-paste on'; printf '\\e[?2004h'")
        await until(pilot, lambda: pane.link.screen.modes.bracketed_paste)
        pane.post_message(events.Paste("echo pa\necho ste"))
        await wait_shown(pilot, pane, "echo ste")
        assert not isinstance(app.screen, ConfirmPrompt)


async def test_copy_a_selection_with_the_mouse_and_paste_it_back(daemon, clock):
    sid = new_session(daemon, BASH)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await type_line(pilot, "clear; echo copy-me-please")
        # The echoed line, not the typed command (which holds the same words): it starts a row.
        await until(pilot, lambda: any(line.startswith("copy-me") for line in shown(pane).split("\n")))
        row = next(i for i, line in enumerate(shown(pane).split("\n")) if line.startswith("copy-me"))
        await pilot.mouse_down(pane, offset=(0, row))
        await pilot.hover(pane, offset=(6, row))
        await pilot.mouse_up(pane, offset=(6, row))
        await until(pilot, lambda: app.clipboard == "copy-me")
        assert "copied the selection" in screen_text(app)
        await pilot.press(*"echo ")
        await prefix(pilot, "right_square_bracket")
        await pilot.press("enter")
        await until(pilot, lambda: shown(pane).count("copy-me") >= 3)


async def test_mouse_goes_to_a_program_that_asks_for_it(daemon, clock):
    sid = new_session(
        daemon, ["bash", "--norc", "--noprofile", "-c", "printf '\\e[?1000h\\e[?1006h'; exec cat -v"]
    )
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await until(pilot, lambda: pane.link.screen.modes.mouse_tracking == "normal")
        await pilot.click(pane, offset=(4, 2))
        await wait_shown(pilot, pane, "^[[<0;5;3M")
        pane.post_message(events.MouseScrollUp(pane, 4, 2, 0, 0, 0, False, False, False))
        await wait_shown(pilot, pane, "^[[<64;5;3M")
        assert not pane.state.scrolling


async def test_read_only_attach_does_not_type(daemon, clock):
    sid = new_session(daemon, BASH)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid, read_only=True)
        assert not pane.takes_every_key
        await pilot.press("x")  # a pane command without the prefix here: detach
        await until(pilot, lambda: not sessions_screen(app).layout_tree.panes())
    with daemon.operator() as op:
        op.call("sessions.input", {"session": sid, "text": "echo watched\n"})
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid, read_only=True)
        await wait_shown(pilot, pane, "watched")
        pane.paste("echo nope\n")
        assert "read-only" in screen_text(app)
        await pilot.pause(0.3)
        assert "nope" not in capture(daemon, sid)


async def test_detach_quit_and_reopen_shows_the_same_screen(daemon, clock):
    sid = new_session(daemon, BASH)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await type_line(pilot, "printf '\\e[1;31mred\\e[0m plain\\n'; echo kept-$((2+3))")
        await wait_shown(pilot, pane, "kept-5")
        before = shown(pane)
        before_size = pane.link.screen.size
        await prefix(pilot, "d")
        await until(pilot, lambda: not sessions_screen(app).layout_tree.panes())
    # quit; a new console opened on the session (as `sessions attach ID` does)
    app = make_app(daemon, clock)
    app.start_session = sid
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        pane = await until(pilot, lambda: screen.focused_pane())
        await until(pilot, lambda: pane.link.state == "live")
        await wait_shown(pilot, pane, "kept-5")
        # The pane is resized to its place in the layout once that settles.
        await until(pilot, lambda: pane.link.screen.size == before_size)
        await until(pilot, lambda: shown(pane) == before)
        # the colours came back too
        row = next(i for i, line in enumerate(shown(pane).split("\n")) if line.startswith("red plain"))
        first = next(iter(pane.render_line(row)))
        assert first.text.startswith("red") and first.style.color is not None and first.style.bold


async def test_a_flood_does_not_stall_another_pane_or_the_queue(daemon, clock, tmp_path):
    flood = tmp_path / "flood.txt"
    line = b"-rw-r--r-- 1 user staff 123456 Nov 30 13:37 \x1b[01;34mfile_%07d.py\x1b[0m\n"
    flood.write_bytes(b"".join(line % i for i in range(10_000_000 // len(line))) + b"FLOOD-DONE\n")
    flooding = new_session(daemon, BASH)
    quiet = new_session(daemon, BASH)
    ws = workspace()
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        noisy = (await open_pane(pilot, app, flooding)).state
        quiet_state = (await open_pane(pilot, app, quiet)).state

        def pane(state):  # the widgets are rebuilt when the layout changes; the states stay
            return screen.pane_widget(state)

        screen.focus_state(noisy)
        await type_line(pilot, f"for i in 1 2 3; do cat {flood}; done")
        await until(pilot, lambda: "file_" in shown(pane(noisy)))
        # during the flood: the other pane answers, and a request can be approved
        screen.focus_state(quiet_state)
        await type_line(pilot, "echo still-here")
        await wait_shown(pilot, pane(quiet_state), "still-here")
        assert "FLOOD-DONE" not in capture(daemon, flooding).split("$")[-1]  # still flooding
        op, tag = tagged(ws)
        agent = Agent(daemon, op)
        rid = await pending_with(pilot, app, tag)
        await prefix(pilot, "s")  # from the pane to the session list, where 1 is the queue again
        await select(pilot, app, rid, clock)
        await pilot.press("a")
        answer = await agent.answer()
        assert answer["verdict"] == "allow"
        await pilot.press("4")
        await until(pilot, lambda: app.current_mode == "sessions")
        await wait_shown(pilot, pane(noisy), "FLOOD-DONE", timeout=120)
        # the pane ends where the session ends: the prompt after the third cat
        await until(pilot, lambda: "FLOOD-DONE\n$" in capture(daemon, flooding), timeout=60)
        await until(pilot, lambda: shown(pane(noisy)).endswith("FLOOD-DONE\n$"), timeout=30)


async def test_session_list_shows_escaped_titles_and_status(daemon, clock):
    hostile = "evil\x1b[2J\x1b]52;c;cm0gLXJm\x07[@click=app.quit]x[/] \u202eexe"
    sid = new_session(
        daemon,
        ["bash", "--norc", "--noprofile", "-c", "printf '\\e]2;pwn\\e[31m\\a'; sleep 60"],
        title=hostile,
    )
    app = make_app(daemon, clock)
    async with app.run_test(size=(200, 40)) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: any(s.id == sid for s in screen.sessions))
        text = await until(pilot, lambda: sid in screen_text(app) and screen_text(app))
        assert "\\e[2J" in text, text
        assert "\\u202e" in text and "[@click=app.quit]" in text, text
        assert app.is_running
        await until(pilot, lambda: any(s.terminal_title for s in screen.sessions if s.id == sid))
        assert foreign_controls(frame(app)) == ""
        # kill (with confirmation), then remove
        screen.view.select_session(sid)
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
        await pilot.press("y")
        await until(pilot, lambda: info(daemon, sid)["status"] == "exited", timeout=20)
        await until(pilot, lambda: "exited" in screen_text(app))
        await pilot.press("X")
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
        await pilot.press("y")
        await until(pilot, lambda: all(s.id != sid for s in screen.sessions))


async def test_new_session_from_the_prompt_and_an_ended_pane(daemon, clock):
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        await pilot.press("n")
        await until(pilot, lambda: type(app.screen).__name__ == "TextPrompt")
        prompt = app.screen
        prompt.query_one("Input").value = "bash --norc --noprofile -c 'echo made-here; read x'"
        await pilot.press("enter")
        pane = await until(pilot, lambda: screen.focused_pane())
        await wait_shown(pilot, pane, "made-here")
        await pilot.press("enter")  # read returns, the program exits
        await until(pilot, lambda: pane.ended)
        await until(pilot, lambda: "exited" in screen_text(app))  # the list's next poll
        assert not pane.takes_every_key
        assert "made-here" in shown(pane)  # the last screen stays


async def test_a_new_session_is_confined_and_unconfined_takes_the_typed_word(daemon, clock):
    """The console's `n` starts a confined session; a line starting with `!` runs one
    unconfined only after the word is typed, and the list says which is which."""
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        before = {s.id for s in screen.sessions}
        await pilot.press("n")
        await until(pilot, lambda: type(app.screen).__name__ == "TextPrompt")
        app.screen.query_one("Input").value = "bash --norc --noprofile -c 'echo boxed; read x'"
        await pilot.press("enter")
        pane = await until(pilot, lambda: screen.focused_pane())
        await wait_shown(pilot, pane, "boxed")
        boxed = next(s for s in screen.sessions if s.id not in before)
        assert boxed.sandboxed

        screen.view.focus()  # keys go to the list again, not the pane's program
        await pilot.press("n")
        await until(pilot, lambda: type(app.screen).__name__ == "TextPrompt")
        app.screen.query_one("Input").value = "!bash --norc --noprofile -c 'echo loose; read x'"
        await pilot.press("enter")
        word = await until(pilot, lambda: app.screen if "Unconfined session" in screen_text(app) else None)
        assert "outside any sandbox" in word.help_text
        word.query_one("Input").value = "yes"  # muscle memory is not the word
        await pilot.press("enter")
        error = word.query_one("#prompt-error")
        await until(pilot, lambda: "type unconfined to start it" in str(error.render()))
        assert {s.id for s in screen.sessions} == before | {boxed.id}
        word.query_one("Input").value = "unconfined"
        await pilot.press("enter")
        loose = await until(
            pilot, lambda: next((s for s in screen.sessions if s.id not in before | {boxed.id}), None)
        )
        assert not loose.sandboxed
        await show_sessions(pilot, app)
        text = screen_text(app)
        assert "UNCONFINED" in text and "sandbox" in text
    with daemon.operator() as op:
        for sid in (boxed.id, loose.id):
            op.call("sessions.kill", {"session": sid, "grace_s": 0.5})


async def test_awaiting_approval_shows_in_the_list(daemon, clock):
    ws = workspace()
    with daemon.agent() as agent:
        op = {
            "kind": "shell",
            "executable": "bash",
            "args": ["--norc", "--noprofile"],
            "workspace_root": str(ws),
            "mode": "durable",
            "session_id": "agent-tui",
        }
        sid = agent.call("operation.submit", {"operation": op})["session"]["id"]
        identity = agent.hello["agent"]
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: any(s.id == sid for s in screen.sessions))
        waiting_op, tag = tagged(ws, session_id=sid)
        waiting = Agent(daemon, waiting_op, identity)  # the session's own agent asks, from it
        await until(pilot, lambda: "awaiting approval" in screen_text(app))
        assert "awaiting approval" in " ".join(app.pills.items.get("sessions", ("",))[:1])
        rid = await pending_with(pilot, app, tag)
        with daemon.operator() as op:
            op.call("decide", {"target": rid, "action": "deny"})
        await waiting.answer()
        await until(pilot, lambda: "awaiting approval" not in screen_text(app))
        # adopt it: it becomes the operator's
        screen.view.select_session(sid)
        screen.view.focus()
        await pilot.press("O")
        await until(pilot, lambda: info(daemon, sid)["owner"] == "operator")
    with daemon.operator() as op:
        op.call("sessions.kill", {"session": sid, "grace_s": 1})


async def test_attach_to_an_exited_session_shows_its_last_screen(daemon, clock):
    sid = new_session(daemon, ["bash", "--norc", "--noprofile", "-c", "echo last-words; exit 3"])
    with daemon.operator() as op:
        op.call("sessions.wait", {"session": sid, "timeout_s": 10})
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: screen.view.select_session(sid))
        await pilot.press("enter")
        pane = await until(pilot, lambda: screen.focused_pane())
        await until(pilot, lambda: pane.ended)
        await wait_shown(pilot, pane, "last-words")
        assert "exited" in screen_text(app)


@pytest.mark.programs
def test_sessions_attach_opens_the_console_in_a_real_terminal(daemon):
    """`agent-console sessions attach ID` in tmux: type into the session, detach, quit."""
    sid = new_session(daemon, BASH, title="from the cli")
    socket = f"ac-{uuid.uuid4().hex[:8]}"

    def tmux(*args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", socket, *args], capture_output=True, text=True, check=True
        ).stdout

    def wait_screen(text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown_now = tmux("capture-pane", "-p", "-t", "t")
            if text in shown_now:
                return shown_now
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared:\n{tmux('capture-pane', '-p', '-t', 't')}")

    command = f"{sys.executable} -m console sessions attach {sid} --state-dir {daemon.state_dir}"
    tmux(
        "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", command + "; echo ATTACH-EXITED $?; sleep 30"
    )
    try:
        wait_screen("from the cli")
        time.sleep(0.5)
        tmux("send-keys", "-t", "t", "-l", "echo typed-in-tmux-$((40+2))")
        tmux("send-keys", "-t", "t", "Enter")
        wait_screen("typed-in-tmux-42")
        assert "typed-in-tmux-42" in capture(daemon, sid)
        # Inside tmux the pane prefix is ctrl+a (ctrl+b stays tmux's), and the console said so.
        said = wait_screen("inside tmux")
        assert "^a prefix" in said and "^a q quit" in said  # the footer has it too
        tmux("send-keys", "-t", "t", "C-a", "d")  # detach: the pane closes
        wait_screen("detached from")
        tmux("send-keys", "-t", "t", "q")
        wait_screen("ATTACH-EXITED 0")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    assert info(daemon, sid)["status"] in ("running", "idle")


async def test_hostile_output_stays_inside_the_pane(daemon, clock):
    script = (
        "printf '\\e]52;c;cm0gLXJmIH4=\\a'"  # the program tries to set the clipboard
        "; printf '\\e]2;title\\e[31m\\x9b2J\\a'"  # a title with escapes in it
        "; printf '\\e]8;;https://evil.example\\e\\\\link\\e]8;;\\e\\\\\\n'"  # an OSC 8 link
        "; printf 'bidi \\u202eexe.txt zero\\u200bwidth [@click=app.quit]markup[/]\\n'"
        "; printf 'DONE\\n'; sleep 600"
    )
    sid = new_session(daemon, ["bash", "--norc", "--noprofile", "-c", script])
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        text = await wait_shown(pilot, pane, "DONE")
        assert "[@click=app.quit]markup[/]" in text  # shown as the characters, not run
        assert "link" in text and "exe.txt" in text
        assert app.clipboard == ""  # the program's OSC 52 never reached the operator
        await until(pilot, lambda: "title" in screen_text(app))
        raw = frame(app)
        assert foreign_controls(raw) == ""
        assert "evil.example" not in raw and "\u202e" not in raw and "\u200b" not in raw
        assert app.is_running


DRAINER = r"""
import os, sys, time, tty
tty.setraw(0)
os.write(1, b"READY")
while not os.path.exists(sys.argv[1]):  # not reading: the daemon's input queue fills
    time.sleep(0.05)
got = b""
while not got.endswith(b"END"):
    got += os.read(0, 1 << 16)
os.write(1, b"\r\nGOT %d x, then %s\r\n" % (got.count(b"x"), got.lstrip(b"x")))
time.sleep(60)
"""


async def test_keys_typed_while_input_is_busy_wait_and_arrive_in_order(daemon, clock, tmp_path):
    go = tmp_path / "go"
    sid = new_session(daemon, [sys.executable, "-c", DRAINER, str(go)])
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await wait_shown(pilot, pane, "READY")
        queued, size = 0, 1 << 18
        with daemon.operator() as op:  # fill the queue to the last byte: then it says busy
            while size:
                try:
                    op.call("sessions.input", {"session": sid, "text": "x" * size})
                    queued += size
                except RPCError as exc:
                    if exc.code != BUSY:
                        raise
                    size //= 2
        pane.focus()
        for key in ("a", "b", "c", "E", "N", "D"):
            await pilot.press(key)
        await until(pilot, lambda: "session input is busy, trying again" in screen_text(app))
        go.touch()  # the program reads at last: the waiting keys go through, in order
        text = await wait_shown(pilot, pane, "GOT ")
        assert f"GOT {queued} x, then abcEND" in text, text
        await until(pilot, lambda: "session input is busy" not in screen_text(app))
    with daemon.operator() as op:
        op.call("sessions.kill", {"session": sid, "grace_s": 0})


async def test_a_list_load_that_lands_after_its_view_went_shows_nothing_and_raises_nothing(daemon, clock):
    """At shutdown the screen is still mounted when its list is already removed; a load
    finishing then must not fail the app (it did, as a NoMatches in the load worker)."""
    from console.tui.widgets.sessions_view import SessionsView

    sid = new_session(daemon, ["sleep", "60"])
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: any(s.id == sid for s in screen.sessions))
        await screen.view.remove()
        screen.reload()
        loads = [w for w in app.workers if w.group == "sessions-load"]
        assert loads
        await until(pilot, lambda: all(w.is_finished for w in loads))
        assert [w.error for w in loads] == [None] * len(loads)
        assert not screen.query(SessionsView) and app.is_running
