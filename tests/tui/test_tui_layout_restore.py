"""The pane layout comes back when the console reopens: a real daemon, real sessions, keys
pressed in the app, then a second app on the same config. Plus the layout document on its
own: round trip and every way a file can be wrong."""

from __future__ import annotations

import json

import pytest
from support.daemon import workspace
from support.tui import Clock, Notices, make_app, until
from support.tui_sessions import BASH, new_session, open_pane, prefix, sessions_screen, show_sessions

from console.tui.model import layout_file
from console.tui.model.layout_file import Box, Document, LayoutError, Pane
from console.tui.panes.pane_area import Split
from console.tui.settings.config import ConfigError, parse_config

pytestmark = pytest.mark.needs_bwrap

SIZE = (120, 40)


DAEMON_POLICY = "approval_timeout_s = 120\n"


@pytest.fixture
def clock():
    return Clock()


def shape(node) -> object:
    """A split tree as nested tuples of session ids (read-only panes marked)."""
    if isinstance(node, Split):
        return (node.direction, *(shape(c) for c in node.children))
    if node is None:
        return None
    return node.session_id + (" (ro)" if node.link.read_only else "")


def notices(seen: Notices) -> list[str]:
    return [str(n.message) for n in seen.raised]


async def arrange(pilot, app, first: str) -> tuple[object, str]:
    """Attach ``first``; split right (a new shell), split that down; zoom the bottom one."""
    screen = sessions_screen(app)
    await open_pane(pilot, app, first)
    await prefix(pilot, "percent_sign")
    await until(pilot, lambda: len(screen.layout_tree.panes()) == 2)
    await until(pilot, lambda: screen.focused_pane() and screen.focused_pane().state.session_id != first)
    await prefix(pilot, "quotation_mark")
    await until(pilot, lambda: len(screen.layout_tree.panes()) == 3)
    third = await until(
        pilot,
        lambda: (
            (p := screen.focused_pane())
            and p.state is screen.layout_tree.panes()[2]
            and p.link.state == "live"
            and p
        ),
    )
    await prefix(pilot, "z")
    await until(pilot, lambda: screen.maximized is not None)
    return shape(screen.layout_tree.root), third.state.session_id


def config(tmp_path, restore: bool = True) -> dict:
    return {"path": tmp_path / "console.toml", "restore_layout": restore}


async def test_split_tree_sessions_and_zoom_come_back(daemon, clock, tmp_path):
    # The splits start confined shells in the first one's directory: a workspace.
    first = new_session(daemon, BASH, cwd=str(workspace()), title="first")
    cfg = config(tmp_path)
    app = make_app(daemon, clock, **cfg)
    async with app.run_test(size=SIZE) as pilot:
        tree, zoomed = await arrange(pilot, app, first)
        await prefix(pilot, "q")  # quit, from inside a pane
    assert tree[0] == "right" and tree[1] == first and tree[2][0] == "down"
    saved = json.loads((tmp_path / "console.layout.json").read_text())
    assert saved["version"] == 1 and saved["zoom"] == 2 and saved["focus"] == 2

    app = make_app(daemon, clock, **cfg)
    seen = Notices()
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: len(screen.layout_tree.panes()) == 3)
        assert shape(screen.layout_tree.root) == tree
        frame = await until(pilot, lambda: screen.maximized)
        assert frame.state.session_id == zoomed
        assert screen.focused_pane().state.session_id == zoomed
        panes = screen.layout_tree.panes()
        await until(pilot, lambda: all(p.link.state == "live" for p in panes))
        # zoom out and the split is there, each pane where it was
        await prefix(pilot, "z")
        await until(pilot, lambda: screen.maximized is None)
        await pilot.pause(0.1)
        r = [screen.area.frame_for(p).region for p in panes]
        assert r[1].x > r[0].x and r[2].x == r[1].x and r[2].y > r[1].y
        assert not [n for n in notices(seen) if "not restored" in n]
    # zooming out was saved too
    assert json.loads((tmp_path / "console.layout.json").read_text())["zoom"] is None


async def test_a_killed_session_is_skipped_with_a_notice_and_read_only_stays(daemon, clock, tmp_path):
    a = new_session(daemon, BASH, title="a")
    b = new_session(daemon, BASH, title="b")
    c = new_session(daemon, BASH, title="c")
    cfg = config(tmp_path)
    app = make_app(daemon, clock, **cfg)
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        await open_pane(pilot, app, a)
        await screen.open_pane(b, read_only=True, direction="right")
        await screen.open_pane(c, beside=screen.layout_tree.panes()[1], direction="down")
        await until(pilot, lambda: len(screen.layout_tree.panes()) == 3)
        tree = shape(screen.layout_tree.root)
    assert tree == ("right", a, ("down", f"{b} (ro)", c))
    with daemon.operator() as op:
        op.call("sessions.kill", {"session": c, "grace_s": 0.5})
        op.call("sessions.wait", {"session": c, "timeout_s": 10})

    app = make_app(daemon, clock, **cfg)
    seen = Notices()
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: len(screen.layout_tree.panes()) == 2)
        await until(pilot, lambda: [n for n in notices(seen) if "not restored" in n])
        # the split that lost its child collapsed into the parent; read-only kept
        assert shape(screen.layout_tree.root) == ("right", a, f"{b} (ro)")
        assert [n for n in notices(seen) if "not restored" in n] == [
            f"1 pane not restored: session {c} ended"
        ]
        await until(pilot, lambda: all(p.link.state == "live" for p in screen.layout_tree.panes()))
    # a session removed altogether is "gone"
    with daemon.operator() as op:
        op.call("sessions.remove", {"session": a})
    app = make_app(daemon, clock, **cfg)
    seen = Notices()
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: [n for n in notices(seen) if "not restored" in n])
        assert [n for n in notices(seen) if "not restored" in n] == [f"1 pane not restored: session {a} gone"]
        assert shape(screen.layout_tree.root) == f"{b} (ro)"


async def test_a_corrupt_layout_file_is_kept_reported_and_gives_no_panes(daemon, clock, tmp_path):
    sid = new_session(daemon, BASH)
    path = tmp_path / "console.layout.json"
    broken = '{"version": 1, "root": {"split": "sideways", "children": []}}'
    path.write_text(broken)
    cfg = config(tmp_path)
    app = make_app(daemon, clock, **cfg)
    seen = Notices()
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        screen = await show_sessions(pilot, app)
        said = await until(pilot, lambda: [n for n in notices(seen) if "layout not restored" in n])
        assert "unknown direction 'sideways'" in said[0] and "console.layout.json.bad" in said[0]
        assert screen.layout_tree.root is None
        # the operator's next layout is saved; the bad file is still there beside it
        await open_pane(pilot, app, sid)
        await until(pilot, lambda: path.exists())
    assert (tmp_path / "console.layout.json.bad").read_text() == broken
    assert json.loads(path.read_text())["root"] == {"session": sid}
    # a second bad file does not overwrite the first copy
    path.write_text("{not json")
    app = make_app(daemon, clock, **cfg)
    seen = Notices()
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: [n for n in notices(seen) if "not valid JSON" in n])
        assert screen.layout_tree.root is None
    assert (tmp_path / "console.layout.json.bad").read_text() == broken
    assert (tmp_path / "console.layout.json.bad.1").read_text() == "{not json"


async def test_restore_turned_off_restores_and_saves_nothing(daemon, clock, tmp_path):
    sid = new_session(daemon, BASH)
    path = tmp_path / "console.layout.json"
    saved = layout_file.dumps(Document(Pane(sid)))
    path.write_text(saved)
    app = make_app(daemon, clock, **config(tmp_path, restore=False))
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: any(s.id == sid for s in screen.sessions))
        await pilot.pause(0.5)
        assert screen.layout_tree.root is None
        other = new_session(daemon, BASH)
        await open_pane(pilot, app, other)
    assert path.read_text() == saved
    # and on again: the file was left as it was, so it comes back
    app = make_app(daemon, clock, **config(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: shape(screen.layout_tree.root) == sid)


def test_the_setting_is_read_and_checked():
    assert parse_config("").restore_layout is True
    assert parse_config("[sessions]\nrestore_layout = false\n").restore_layout is False
    with pytest.raises(ConfigError, match=r"sessions\.restore_layout: expected true or false"):
        parse_config('[sessions]\nrestore_layout = "no"\n')
    with pytest.raises(ConfigError, match=r"unknown key sessions\.restore"):
        parse_config("[sessions]\nrestore = true\n")


# ------------------------------------------------------------ the document on its own


def test_document_round_trip():
    doc = Document(
        Box("right", (Pane("a1"), Box("down", (Pane("b2", read_only=True), Pane("c3"))), Pane("d4"))),
        zoom=2,
        focus=1,
    )
    text = layout_file.dumps(doc)
    assert layout_file.loads(text) == doc
    assert json.loads(text)["root"]["children"][1]["children"][0] == {"session": "b2", "read_only": True}
    assert layout_file.loads(layout_file.dumps(Document())) == Document()
    assert [p.session for p in doc.panes()] == ["a1", "b2", "c3", "d4"]


def test_layout_path_is_keyed_by_the_config_file(tmp_path):
    assert layout_file.layout_path(tmp_path / "config.toml") == tmp_path / "config.layout.json"
    assert layout_file.layout_path(tmp_path / "work.toml") == tmp_path / "work.layout.json"
    assert layout_file.layout_path(tmp_path / "rc") == tmp_path / "rc.layout.json"


def test_save_is_atomic_and_load_reads_it_back(tmp_path):
    path = tmp_path / "deeper" / "x.layout.json"
    assert layout_file.load(path) is None
    doc = Document(Box("down", (Pane("a"), Pane("b"))), focus=0)
    layout_file.save(path, doc)
    assert layout_file.load(path) == doc
    layout_file.save(path, Document(Pane("c")))
    assert layout_file.load(path) == Document(Pane("c"))
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.layout.json"]  # no temp left


def _doc(root, **top) -> str:
    return json.dumps({"version": 1, "root": root, **top})


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[1, 2]", "expected a JSON object at the top, got list"),
        ('{"root": null}', "no version"),
        (json.dumps({"version": 2, "root": None}), "unknown version 2"),
        (json.dumps({"version": True, "root": None}), "unknown version True"),
        (_doc(None, extra=1), "unknown key 'extra'"),
        (
            _doc({"split": "left", "children": [{"session": "a"}, {"session": "b"}]}),
            "root.split: unknown direction 'left'",
        ),
        (
            _doc({"split": "right", "children": [{"session": "a"}]}),
            "root.children: a split needs at least 2 children, got 1",
        ),
        (_doc({"split": "right", "children": {"session": "a"}}), "root.children: expected a list, got dict"),
        (
            _doc({"split": "down", "children": [{"session": "a"}, {"session": "b", "zoom": True}]}),
            "root.children[1]: unknown key 'zoom' in a pane",
        ),
        (
            _doc({"split": "down", "children": [{"session": "a"}, {"session": "b"}], "size": 3}),
            "unknown key 'size' in a split",
        ),
        (_doc({"session": "a", "read_only": "yes"}), "root.read_only: expected true or false, got str"),
        (_doc({"session": "a\u001b[2J"}), "root.session: not a session id"),
        (_doc({"session": 7}), "root.session: not a session id"),
        (_doc({"title": "x"}), 'root: neither a pane ("session") nor a split ("split")'),
        (_doc(["a"]), "root: expected a pane or a split (an object), got list"),
        (_doc({"session": "a"}, zoom=1), "zoom: pane index 1 out of range (the layout has 1 panes)"),
        (_doc({"session": "a"}, focus="a"), "focus: expected a pane index or null, got str"),
        ('{"version": 1, "version": 1, "root": null}', "duplicate key 'version'"),
        ("{nope", "not valid JSON"),
        (" " * (layout_file.MAX_BYTES + 1), "too large"),
        ("[" * 10_000 + "]" * 10_000, "not valid JSON"),
    ],
    ids=lambda v: v[:30] if isinstance(v, str) else None,
)
def test_a_bad_document_says_what_is_wrong(text, says):
    with pytest.raises(LayoutError) as caught:
        layout_file.loads(text)
    assert says in str(caught.value)


def test_nesting_and_pane_count_are_bounded():
    node: dict = {"session": "a"}
    for _ in range(layout_file.MAX_DEPTH + 1):
        node = {"split": "right", "children": [node, {"session": "b"}]}
    with pytest.raises(LayoutError, match="nested deeper than"):
        layout_file.loads(_doc(node))
    many = {"split": "right", "children": [{"session": f"s{i}"} for i in range(layout_file.MAX_PANES + 1)]}
    with pytest.raises(LayoutError, match="too many panes"):
        layout_file.loads(_doc(many))


def test_a_layout_that_would_not_read_back_is_not_written(tmp_path):
    with pytest.raises(LayoutError):
        layout_file.dumps(Document(Box("right", (Pane("a"),))))
    with pytest.raises(LayoutError):
        layout_file.save(tmp_path / "x.json", Document(Pane("a"), zoom=3))
    assert not (tmp_path / "x.json").exists()


def test_set_aside_keeps_every_bad_copy(tmp_path):
    path = tmp_path / "c.layout.json"
    path.write_text("one")
    assert layout_file.set_aside(path).name == "c.layout.json.bad"
    path.write_text("two")
    assert layout_file.set_aside(path).name == "c.layout.json.bad.1"
    assert not path.exists()
    assert (tmp_path / "c.layout.json.bad").read_text() == "one"


async def test_sessions_attach_id_joins_the_restored_layout(daemon, clock, tmp_path):
    kept, asked = new_session(daemon, BASH), new_session(daemon, BASH)
    cfg = config(tmp_path)
    layout_file.save(tmp_path / "console.layout.json", Document(Pane(kept), focus=0))
    app = make_app(daemon, clock, **cfg)
    app.start_session = asked  # as `agent-console sessions attach ID` opens it
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: len(screen.layout_tree.panes()) == 2)
        assert [p.session_id for p in screen.layout_tree.panes()] == [kept, asked]
        await until(pilot, lambda: screen.focused_pane() and screen.focused_pane().state.session_id == asked)
    # already in the layout: focused there, not opened twice
    app = make_app(daemon, clock, **cfg)
    app.start_session = kept
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        await until(pilot, lambda: screen.focused_pane() and screen.focused_pane().state.session_id == kept)
        await pilot.pause(0.3)
        assert [p.session_id for p in screen.layout_tree.panes()] == [kept, asked]
