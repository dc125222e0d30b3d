"""console.sessions with real processes on real PTYs: I/O, resize, attach,
alternate-screen programs, ring buffer, recordings and daemon restarts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil

import pytest
from support.sessions import child_env, shell, start_manager, until

from console.sessions import (
    Ended,
    Output,
    ReadOnlyClient,
    Resized,
    SessionError,
    SessionNotRunning,
    Snapshot,
    UnknownSession,
    read_recording,
    replay,
    screen_from_recording,
)
from console.terminal import Screen


@pytest.fixture
async def manager(tmp_path):
    events = []
    m = await start_manager(tmp_path / "state", on_event=events.append, idle_after_s=0.6)
    m.events = events  # type: ignore[attr-defined]
    yield m
    await m.close(grace_s=0.5)


def screen(m, sid):
    return m.screen_text(sid)


async def test_output_and_input_round_trip_through_cat(manager, tmp_path):
    sid = shell(manager, tmp_path, "echo ready; exec cat")
    await until(lambda: "ready" in screen(manager, sid), what="ready")
    manager.write(sid, b"hello pty\r")
    # The terminal echoes the line, then cat prints it back.
    await until(lambda: screen(manager, sid).count("hello pty") == 2, what="echo and cat")
    data, nxt, dropped = manager.read(sid, 0, 1 << 20)
    assert dropped == 0 and nxt == manager.get(sid).output_bytes
    assert data.count(b"hello pty") == 2
    manager.write(sid, b"\x04")  # ctrl-d: cat sees end of input
    info = await manager.wait(sid, timeout=10)
    assert info.status == "exited" and info.exit_code == 0
    with pytest.raises(SessionNotRunning):
        manager.write(sid, b"more")


async def test_resize_round_trip_and_most_recent_client_wins(manager, tmp_path):
    sid = shell(manager, tmp_path, "echo ready; while read -r line; do stty size; done", cols=80, rows=24)
    await until(lambda: "ready" in screen(manager, sid))
    manager.write(sid, b"\r")
    await until(lambda: "24 80" in screen(manager, sid), what="initial size")
    manager.resize(sid, 100, 30, "pane-a")
    manager.resize(sid, 132, 43, "pane-b")
    manager.write(sid, b"\r")
    await until(lambda: "43 132" in screen(manager, sid), what="pane-b size")
    manager.write(sid, b"\r", client_id="pane-a")  # pane-a types: its size wins again
    await until(lambda: "30 100" in screen(manager, sid), what="pane-a size")
    assert (manager.get(sid).cols, manager.get(sid).rows) == (100, 30)
    manager.detach(sid, "pane-a")  # pane-a leaves: the other known size applies
    manager.write(sid, b"\r")
    await until(lambda: screen(manager, sid).rstrip().endswith("43 132"), what="pane-b size after detach")


@pytest.mark.programs
async def test_alternate_screen_program_enters_and_leaves(manager, tmp_path):
    if shutil.which("vim") is None:
        pytest.fail("vim is required (apt-get install vim)")
    sid = manager.create(
        ["sh", "-c", "echo before-vim; vim -u NONE -N -i NONE -n; echo after-vim; exec cat"],
        cwd=str(tmp_path),
        env=child_env(tmp_path),
        owner="operator",
        cols=80,
        rows=24,
    ).id
    session_screen = manager._sessions[sid].screen()
    await until(lambda: session_screen.alternate_screen, what="vim on the alternate screen")
    manager.write(sid, b"ihello from vim\x1b")
    await until(lambda: "hello from vim" in screen(manager, sid), what="typed text")
    assert "before-vim" not in screen(manager, sid)

    # A client attaching now sees what the daemon sees, modes included.
    att = manager.attach(sid, "pane")
    client = Screen(att.snapshot.cols, att.snapshot.rows)
    client.feed(att.snapshot.data)
    assert client.text() == session_screen.text()
    assert client.cursor == session_screen.cursor
    assert client.modes == session_screen.modes and client.modes.alternate_screen

    manager.write(sid, b":q!\r")
    await until(lambda: "after-vim" in screen(manager, sid), what="vim exits")
    assert not session_screen.alternate_screen
    assert "before-vim" in screen(manager, sid)
    # The client, fed the live stream, comes back to the same primary screen.
    while (ev := att.get_nowait()) is not None:
        assert isinstance(ev, Output)
        client.feed(ev.data)
    assert client.text() == session_screen.text()
    assert not client.modes.alternate_screen


async def test_attach_snapshot_then_live_stream(manager, tmp_path):
    sid = shell(
        manager, tmp_path, "printf '\\033[31mred\\033[0m\\n\\033]2;my title\\007'; exec cat", cols=60, rows=10
    )
    await until(lambda: "red" in screen(manager, sid))
    att = manager.attach(sid, "pane")
    snap = att.snapshot
    assert isinstance(snap, Snapshot) and snap.offset == manager.get(sid).output_bytes
    client = Screen(snap.cols, snap.rows)
    client.feed(snap.data)
    assert client.text() == screen(manager, sid) and client.title == "my title"
    manager.write(sid, b"typed\r", client_id="pane")
    ev = await asyncio.wait_for(att.get(), 10)
    assert isinstance(ev, Output) and ev.offset == snap.offset
    client.feed(ev.data)
    await until(lambda: screen(manager, sid).count("typed") == 2)
    while (ev := att.get_nowait()) is not None:
        client.feed(ev.data)
    assert client.text() == screen(manager, sid)
    manager.resize(sid, 70, 12, "pane")
    resized = await asyncio.wait_for(att.get(), 10)
    assert isinstance(resized, Resized) and (resized.cols, resized.rows) == (70, 12)
    manager.detach(sid, "pane")
    end = await asyncio.wait_for(att.get(), 10)
    assert isinstance(end, Ended) and end.reason == "detached"


async def test_read_only_client_cannot_type(manager, tmp_path):
    sid = shell(manager, tmp_path, "exec cat")
    manager.attach(sid, "viewer", read_only=True)
    with pytest.raises(ReadOnlyClient):
        manager.write(sid, b"x", client_id="viewer")
    with pytest.raises(ReadOnlyClient):
        manager.resize(sid, 100, 30, "viewer")
    manager.write(sid, b"x", client_id="operator-pane")


async def test_a_client_that_falls_behind_gets_a_fresh_snapshot(tmp_path):
    m = await start_manager(tmp_path / "state", attach_max_pending=4096)
    try:
        quiet = shell(m, tmp_path, "exec cat")
        att = m.attach(quiet, "slow")
        # The client reads nothing while 120 kB go by; the session does not wait.
        script = "i=0; while [ $i -lt 2000 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done"
        flood = shell(m, tmp_path, script)
        att2 = m.attach(flood, "slow")
        await m.wait(flood, timeout=30)
        ev = att2.get_nowait()
        assert isinstance(ev, Snapshot) and att2.resyncs == 1
        client = Screen(ev.cols, ev.rows)
        client.feed(ev.data)
        assert client.text() == m.screen_text(flood)
        assert "line-1999-" in client.text()
        assert isinstance(att2.get_nowait(), Ended)
        assert att.get_nowait() is None  # the quiet session's client is unaffected
    finally:
        await m.close(grace_s=0.5)


async def test_ring_buffer_reports_dropped_bytes(tmp_path):
    m = await start_manager(tmp_path / "state", ring_bytes=4096)
    try:
        sid = shell(m, tmp_path, "i=0; while [ $i -lt 1000 ]; do echo row-$i; i=$((i+1)); done")
        await m.wait(sid, timeout=30)
        total = m.get(sid).output_bytes
        assert total > 4096
        data, nxt, dropped = m.read(sid, 0, 1 << 20)
        assert dropped == total - 4096 and len(data) == 4096 and nxt == total
        assert data.endswith(b"row-999\r\n")
        again = m.read(sid, nxt, 100)
        assert again.data == b"" and again.dropped_bytes == 0 and again.next_offset == total
        with pytest.raises(SessionError):
            m.read(sid, total + 1, 10)
    finally:
        await m.close(grace_s=0.5)


async def test_utf8_character_split_across_reads_is_whole_in_the_recording(manager, tmp_path):
    # The euro sign's three bytes leave the program in two writes 0.3 s apart, so
    # the daemon reads them in two chunks.
    sid = shell(manager, tmp_path, "printf 'price: \\342\\202'; sleep 0.3; printf '\\254 end\\n'")
    await manager.wait(sid, timeout=10)
    data = manager.read(sid, 0, 4096).data
    assert "price: € end".encode() in data
    _, events = read_recording(manager.recording_path(sid))
    outputs = [ev.data for ev in events if ev.code == "o"]
    assert any("€" in text for text in outputs)
    assert not any("\ufffd" in text for text in outputs)
    assert "".join(outputs).count("€") == 1
    split = [i for i, text in enumerate(outputs) if text.endswith("price: ")]
    assert split, f"the character was not split across reads: {outputs!r}"


async def test_recording_replays_to_the_same_final_screen(manager, tmp_path):
    script = (
        "printf '\\033[2J\\033[H\\033[1;34mtitle\\033[0m\\n'; "
        "i=0; while [ $i -lt 60 ]; do printf 'line %d \\033[3%dmcolour\\033[0m\\n' $i $((i % 8)); i=$((i+1)); done; "
        "printf '\\033[5;10Hoverwrite\\033[K'; read -r x; printf 'after resize %s\\n' \"$x\"; stty size"
    )
    sid = shell(manager, tmp_path, script, cols=50, rows=12)
    await until(lambda: "overwrite" in screen(manager, sid))
    manager.resize(sid, 70, 15, "pane")
    manager.write(sid, "ünïcode ✓\r".encode(), client_id="pane")
    info = await manager.wait(sid, timeout=10)
    assert info.exit_code == 0
    path = manager.recording_path(sid)
    header, events = read_recording(path)
    assert (header["width"], header["height"]) == (50, 12)
    kinds = {ev.code for ev in events}
    assert kinds == {"o", "r"}  # no input events unless asked for
    replayed = screen_from_recording(path)
    assert replayed.text(scrollback=True) == manager.screen_text(sid, scrollback=True)
    assert replayed.size == (70, 15)

    written: list[str] = []
    final = replay(path, speed=1000.0, write=written.append, sleep=lambda s: None)
    assert final.text() == manager.screen_text(sid)
    # the player itself ends with a reset, no newline to scroll the last frame away
    assert written[-1] == "\x1b[0m", repr(written[-1])


async def test_input_is_recorded_only_when_asked(manager, tmp_path):
    sid = shell(manager, tmp_path, "read -r secret; echo done", record_input=True)
    manager.write(sid, b"hunter2\r")
    await manager.wait(sid, timeout=10)
    _, events = read_recording(manager.recording_path(sid))
    assert any(ev.code == "i" and "hunter2" in ev.data for ev in events)


async def test_replay_paints_from_cells_and_drops_program_escapes(manager, tmp_path):
    script = "printf 'visible\\033]52;c;SGVsbG8=\\007\\033]2;evil title\\007\\033[?1049h\\033[?1049l done\\n'"
    sid = shell(manager, tmp_path, script)
    await manager.wait(sid, timeout=10)
    written: list[str] = []
    replay(manager.recording_path(sid), write=written.append, sleep=lambda s: None)
    out = "".join(written)
    assert "visible" in out and "done" in out
    assert "]52;" not in out and "evil title" not in out and "?1049h" not in out


async def test_a_session_starts_with_default_signals_whatever_its_daemon_ignores(manager, tmp_path):
    """A daemon started in a script's background ignores SIGINT and SIGQUIT; its sessions
    must not inherit that, or Ctrl-C in a pane does nothing."""
    import signal

    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    try:
        sid = shell(manager, tmp_path, "grep SigIgn /proc/self/status")
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    await manager.wait(sid, timeout=10)
    ignored = int(manager.screen_text(sid).split("SigIgn:")[1].split()[0], 16)
    assert not ignored & (1 << (signal.SIGINT - 1)), hex(ignored)
    assert not ignored & (1 << (signal.SIGQUIT - 1)), hex(ignored)


async def test_status_idle_running_exited_and_events(manager, tmp_path):
    sid = shell(manager, tmp_path, "echo start; exec cat")
    # Seen output first: a signal sent before the shell runs is lost in the fork.
    await until(lambda: "start" in manager.screen_text(sid), what="the shell's output")
    await until(lambda: manager.get(sid).status == "idle", what="idle")
    manager.write(sid, b"wake\r")
    await until(lambda: manager.get(sid).status == "running", what="running again")
    manager.signal(sid, 2)  # SIGINT to the process group, like ctrl-c
    info = await manager.wait(sid, timeout=10)
    assert info.status_text == "exited (SIGINT)"
    kinds = [(e.kind, e.session.status) for e in manager.events if e.session.id == sid]
    assert kinds[0] == ("created", "running")
    assert ("status", "idle") in kinds and ("status", "running") in kinds
    assert kinds[-1] == ("exited", "exited")


async def test_restart_marks_sessions_lost_and_keeps_recordings(tmp_path):
    state = tmp_path / "state"
    first = await start_manager(state)
    sid = first.create(
        ["sh", "-c", "trap '' HUP; echo survivor; while :; do sleep 1; done"],
        cwd=str(tmp_path),
        env=child_env(tmp_path),
        owner="agent-7",
        mode="durable",
    ).id
    await until(lambda: "survivor" in first.screen_text(sid))
    pid = first.get(sid).pid
    # The daemon goes away without ending its sessions (as if it crashed): the PTY
    # closes, the child ignores SIGHUP and lives on without a terminal.
    await first.close(kill=False)
    import psutil

    assert psutil.pid_exists(pid)

    second = await start_manager(state)
    try:
        info = second.get(sid)
        assert info.status == "lost" and info.owner == "agent-7" and info.mode == "durable"
        assert "survivor" in second.screen_text(sid)  # rebuilt from the recording
        meta = json.loads((state / "sessions" / sid / "meta.json").read_text())
        assert meta["status"] == "lost"
        # Its stray process is ended: nothing of a lost session keeps running.
        await until(lambda: not _running(pid), what="stray process ended")
        with pytest.raises(SessionNotRunning):
            second.write(sid, b"x")
        await second.remove(sid)
        assert not (state / "sessions" / sid).exists()
        with pytest.raises(UnknownSession):
            second.get(sid)
    finally:
        await second.close()
        _reap(pid)


def _running(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


async def test_bad_requests_get_clear_errors(manager, tmp_path):
    with pytest.raises(SessionError, match="working directory"):
        manager.create(["true"], cwd=str(tmp_path / "missing"), env=child_env(tmp_path), owner="op")
    with pytest.raises(SessionError, match="could not start"):
        manager.create(["no-such-program-xyz"], cwd=str(tmp_path), env=child_env(tmp_path), owner="op")
    with pytest.raises(SessionError, match="argv"):
        manager.create([], cwd=str(tmp_path), env=child_env(tmp_path), owner="op")
    with pytest.raises(SessionError, match="size"):
        manager.create(["true"], cwd=str(tmp_path), env=child_env(tmp_path), owner="op", cols=0)
    with pytest.raises(UnknownSession):
        manager.get("../../etc")
    assert list((tmp_path / "state" / "sessions").iterdir()) == []


async def test_owners_interactive_sessions_end_with_it_durable_ones_stay(manager, tmp_path):
    a = shell(manager, tmp_path, "exec cat", owner="agent-1", mode="interactive")
    b = shell(manager, tmp_path, "exec cat", owner="agent-1", mode="durable")
    c = shell(manager, tmp_path, "exec cat", owner="agent-2", mode="interactive")
    manager.adopt(c, "operator", "durable")
    assert {i.id for i in manager.infos(owner="agent-1")} == {a, b}
    ended = await manager.release_owner("agent-1", grace_s=0.5)
    assert ended == [a]
    assert manager.get(a).status == "exited"
    assert manager.get(b).alive and manager.get(c).alive
    assert await manager.release_owner("agent-2") == []


def test_a_backlog_is_delivered_in_bounded_pieces():
    """Output queued for a slow client is handed out at most MAX_OUTPUT at a time, in order."""
    from console.sessions.attach import MAX_OUTPUT, Attachment, Snapshot

    att = Attachment(
        "s",
        "c",
        False,
        Snapshot(0, b"", 80, 24),
        resync=lambda: Snapshot(0, b"", 80, 24),
        max_pending=64 * MAX_OUTPUT,
    )
    chunk = b"x" * 65536
    total = 3 * MAX_OUTPUT + 1000
    sent = 0
    while sent < total:
        piece = chunk[: min(len(chunk), total - sent)]
        att._push_output(sent, piece)
        sent += len(piece)
    got, offset = [], 0
    while (ev := att.get_nowait()) is not None:
        assert ev.offset == offset
        assert len(ev.data) <= MAX_OUTPUT
        offset += len(ev.data)
        got.append(ev)
    assert offset == total and len(got) == 4
