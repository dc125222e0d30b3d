"""Config, keymap and theme files: checked up front, with errors that say what to fix."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from console.tui.panes.pane_keys import PaneKeys
from console.tui.settings.actions import ACTIONS, contexts, default_keys
from console.tui.settings.config import Config, ConfigError, config_path, load_config, parse_config
from console.tui.settings.keymaps import (
    KeymapError,
    clashes,
    load_keymap_file,
    normalize_key,
    parse_keymap,
    resolve,
)
from console.tui.settings.prepared import SettingsError, prepare
from console.tui.settings.resources import bundled_dir
from console.tui.settings.themefiles import ThemeError, load_theme_file, parse_theme
from console.tui.settings.themes import load_themes, to_theme

KEYMAPS = bundled_dir("keymaps")
THEMES = bundled_dir("themes")


def test_defaults():
    cfg = parse_config("")
    assert cfg.theme == "dark" and cfg.keymap == "default" and cfg.guard_idle_s == 0.5
    assert cfg.notifications.toast and cfg.notifications.bell and cfg.notifications.desktop == "osc777"


def test_full_config():
    cfg = parse_config(
        'theme = "light"\nkeymap = "vim"\n[guard]\nidle_s = 1\n[notifications]\nbell = false\ndesktop = "osc9"\n'
        '[display]\nmax_chars = 500\nmax_lines = 10\n[keys]\napprove-once = "y"\n'
    )
    assert (cfg.theme, cfg.keymap, cfg.guard_idle_s, cfg.max_chars, cfg.max_lines) == (
        "light",
        "vim",
        1.0,
        500,
        10,
    )
    assert not cfg.notifications.bell and cfg.notifications.desktop == "osc9"
    assert cfg.keys == {"approve-once": "y"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("theme = 3", "theme: expected a string, got int 3"),
        (
            'colour = "x"',
            "unknown key colour; allowed here: display, guard, keymap, keys, notifications, sessions, theme",
        ),
        ("[guard]\nidle_s = -1", "guard.idle_s: must be between 0 and 10"),
        ("[guard]\nidle = 1", "unknown key guard.idle; allowed here: guard.idle_s"),
        ('[notifications]\nbell = "yes"', "notifications.bell: expected true or false, got str 'yes'"),
        (
            '[notifications]\ndesktop = "growl"',
            "notifications.desktop: unknown value 'growl'; allowed: \"osc777\"",
        ),
        ("[display]\nmax_chars = 1.5", "display.max_chars: expected a whole number"),
        ("guard = 1", "guard: must be a table"),
        ('theme = "../etc"', "theme: must be a theme or keymap name"),
        ("theme = ", "not valid TOML"),
    ],
)
def test_bad_config_says_where_and_why(text, message):
    with pytest.raises(ConfigError) as info:
        parse_config(text, "/home/me/.config/agent-console/config.toml")
    assert str(info.value).startswith("/home/me/.config/agent-console/config.toml: ")
    assert message in str(info.value)


def test_config_path_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_path("/x/c.toml", "/state") == (Path("/x/c.toml"), True)
    assert config_path(None, "/state") == (Path("/state/config.toml"), False)
    path, must = config_path(None, None)
    assert path.name == "config.toml" and path.parent.name == "agent-console" and not must


def test_missing_files(tmp_path):
    assert load_config(tmp_path / "none.toml", must_exist=False) == Config(path=tmp_path / "none.toml")
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "none.toml", must_exist=True)


# ---------------------------------------------------------------------- keymaps


def test_every_action_has_a_unique_id_and_valid_keys():
    ids = [a.id for a in ACTIONS]
    assert len(ids) == len(set(ids))
    for a in ACTIONS:
        for key in a.keys.split(","):
            assert normalize_key(key) == key, a.id


def test_default_keymap_file_lists_exactly_the_defaults():
    data = tomllib.loads((KEYMAPS / "default.toml").read_text())
    assert data["keys"] == default_keys()


@pytest.mark.parametrize("name", ["default", "vim", "emacs"])
def test_bundled_keymaps_load_without_clashes(name):
    keys = resolve(load_keymap_file(KEYMAPS / f"{name}.toml"))
    assert set(keys) == set(default_keys())
    assert clashes(keys) == []


def test_vim_and_emacs_change_movement():
    vim = resolve(load_keymap_file(KEYMAPS / "vim.toml"))
    emacs = resolve(load_keymap_file(KEYMAPS / "emacs.toml"))
    assert vim["cursor-first"].split(",")[0] == "g" and vim["command-palette"].startswith("colon")
    assert emacs["cursor-down"].startswith("ctrl+n") and emacs["command-palette"] == "alt+x"


def test_keymap_errors():
    with pytest.raises(KeymapError, match="unknown binding id 'aprove-once'"):
        parse_keymap('[keys]\naprove-once = "y"', "mine")
    with pytest.raises(KeymapError, match="not a key name"):
        parse_keymap('[keys]\napprove-once = "ctrl+"', "mine")
    with pytest.raises(KeymapError, match="expected a key or a list"):
        parse_keymap("[keys]\napprove-once = 3", "mine")
    with pytest.raises(KeymapError, match=r"name = 'other' but the file is mine\.toml"):
        parse_keymap('name = "other"', "mine")


def test_keymap_accepts_lists_and_punctuation():
    km = parse_keymap('[keys]\nhelp = ["?", "f1"]\nfilter-queue = "/"', "mine")
    assert km.keys == {"help": "question_mark,f1", "filter-queue": "slash"}


def test_a_clash_names_both_actions():
    with pytest.raises(KeymapError, match="a is bound to both approve-once and deny"):
        resolve(None, {"deny": "a"})
    # the same key in views that are never active together is fine
    assert resolve(None, {"history-verdict": "a"})["history-verdict"] == "a"


# ---------------------------------------------------------------------- key tables (tmux's names)

OLD_NAMES_KEYMAP = """
name = "mine"
[keys.pane-live]
pane-prefix = "ctrl+a"
[keys.pane]
pane-zoom = "Z"
[keys.pane-scroll]
scroll-exit = "x,escape"
"""


def test_a_panes_key_tables_have_tmuxs_names():
    scopes = {spec.id: spec.scope for spec in ACTIONS}
    assert scopes["pane-prefix"] == scopes["pane-scroll-up"] == "root"
    assert scopes["pane-zoom"] == scopes["pane-scroll-mode"] == "prefix"
    assert scopes["scroll-exit"] == scopes["scroll-search"] == "copy-mode"
    assert not {"pane-live", "pane", "pane-scroll"} & set(scopes.values())
    assert {"root", "prefix", "copy-mode"} <= set(contexts())


def test_a_keymap_may_group_its_bindings_by_key_table():
    km = parse_keymap(
        '[keys]\napprove-once = "y"\n[keys.root]\npane-prefix = "ctrl+a"\n'
        '[keys.prefix]\npane-zoom = "Z"\n[keys.copy-mode]\nscroll-exit = "x"\n',
        "mine",
    )
    assert km.keys == {"approve-once": "y", "pane-prefix": "ctrl+a", "pane-zoom": "Z", "scroll-exit": "x"}
    assert km.notices == ()
    with pytest.raises(KeymapError, match="pane-zoom is in the prefix table, not root"):
        parse_keymap('[keys.root]\npane-zoom = "Z"', "mine")
    with pytest.raises(KeymapError, match=r"\[keys.panes\] is not a key table"):
        parse_keymap('[keys.panes]\npane-zoom = "Z"', "mine")
    with pytest.raises(KeymapError, match="unknown binding id 'pane-zom'"):
        parse_keymap('[keys.prefix]\npane-zom = "Z"', "mine")


def test_a_user_keymap_with_the_old_table_names_still_binds_with_one_notice(tmp_path):
    (tmp_path / "keymaps").mkdir()
    (tmp_path / "keymaps" / "mine.toml").write_text(OLD_NAMES_KEYMAP)
    settings = prepare(parse_config('keymap = "mine"', path=tmp_path / "config.toml"))
    keys = PaneKeys.from_keys(settings.keys)
    assert keys.prefix == {"ctrl+a"}
    assert keys.after_prefix["Z"].id == "pane-zoom" and keys.scrolling["x"].id == "scroll-exit"
    assert len(settings.notices) == 1
    (notice,) = settings.notices
    for old, new in (("pane-live", "root"), ("pane", "prefix"), ("pane-scroll", "copy-mode")):
        assert f"[keys.{old}] is now [keys.{new}]" in notice
    assert "mine.toml" in notice
    settings.keymap_keys("mine")  # switching back to it later says nothing new
    assert len(settings.notices) == 1


def test_the_config_keys_may_use_the_old_table_names_too(tmp_path):
    cfg = parse_config('[keys.pane-live]\npane-prefix = "ctrl+a"\n', path=tmp_path / "config.toml")
    settings = prepare(cfg)
    assert settings.keys["pane-prefix"] == "ctrl+a"
    assert len(settings.notices) == 1 and "[keys.pane-live] is now [keys.root]" in settings.notices[0]


async def test_the_console_shows_the_old_names_notice_once(tmp_path):
    from support.snapshot_data import ReplayClient
    from support.tui import Notices

    from console.tui.app import ConsoleApp

    (tmp_path / "keymaps").mkdir()
    (tmp_path / "keymaps" / "mine.toml").write_text(OLD_NAMES_KEYMAP)
    settings = prepare(parse_config('keymap = "mine"', path=tmp_path / "config.toml"))

    async def connect() -> ReplayClient:
        return ReplayClient()

    app = ConsoleApp(settings, connect=connect)  # type: ignore[arg-type]
    seen = Notices()
    async with app.run_test(size=(120, 40), message_hook=seen) as pilot:
        await pilot.pause(0.1)
        shown = [n for n in seen.raised if "is now [keys.root]" in n.message]
        assert len(shown) == 1 and shown[0].severity == "warning"


# ---------------------------------------------------------------------- themes


def test_bundled_themes():
    themes = load_themes([THEMES])
    assert {"dark", "light", "high-contrast", "solarized"} <= set(themes)
    assert themes["light"].dark is False


def test_theme_errors(tmp_path):
    with pytest.raises(ThemeError, match="primary is required"):
        parse_theme("dark = true", "mine")
    with pytest.raises(ThemeError, match="unknown key 'primay'"):
        parse_theme('primary = "#fff"\nprimay = "#000"', "mine")
    with pytest.raises(ThemeError, match="'nocolour' is not a colour"):
        to_theme(parse_theme('primary = "nocolour"', "mine"))
    path = tmp_path / "mine.toml"
    path.write_text('primary = "#123456"\n[variables]\n"footer-key-foreground" = "#ff0000"\n')
    theme = to_theme(load_theme_file(path))
    assert theme.name == "mine" and theme.variables == {"footer-key-foreground": "#ff0000"}


def test_user_themes_and_keymaps_come_from_the_config_directory(tmp_path):
    (tmp_path / "themes").mkdir()
    (tmp_path / "themes" / "mine.toml").write_text('primary = "#abcdef"\n')
    (tmp_path / "keymaps").mkdir()
    (tmp_path / "keymaps" / "mine.toml").write_text('[keys]\napprove-once = "y"\n')
    cfg = parse_config('theme = "mine"\nkeymap = "mine"\n[keys]\ndeny = "N"', path=tmp_path / "config.toml")
    settings = prepare(cfg)
    assert settings.theme == "mine" and settings.keymap == "mine"
    assert settings.keys["approve-once"] == "y" and settings.keys["deny"] == "N"


def test_prepare_refuses_unknown_names():
    with pytest.raises(
        SettingsError, match="no theme 'neon'; available: dark, high-contrast, light, solarized"
    ):
        prepare(Config(), theme="neon")
    with pytest.raises(SettingsError, match="no keymap 'qwerty'"):
        prepare(Config(), keymap="qwerty")
    with pytest.raises(SettingsError, match="bound to both"):
        prepare(Config(keys={"deny": "a"}))


def test_a_binding_given_both_in_a_table_and_flat_is_an_error_whatever_the_order():
    # A flat binding after a table of the same id used to win silently (TOML keeps an
    # inline table's place in [keys], so it can come first).
    for text in (
        '[keys]\nroot = { pane-prefix = "ctrl+a" }\npane-prefix = "ctrl+s"\n',
        '[keys]\npane-prefix = "ctrl+s"\n[keys.root]\npane-prefix = "ctrl+a"\n',
    ):
        with pytest.raises(KeymapError, match=r"pane-prefix is given twice \(\[keys.root\] and elsewhere\)"):
            parse_keymap(text, "mine")


def test_inside_tmux_the_pane_prefix_moves_off_ctrl_b_and_says_so(monkeypatch):
    """Inside tmux ctrl+b is tmux's own prefix: every pane command became C-b C-b …."""
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1,0")
    settings = prepare(Config())
    assert settings.keys["pane-prefix"] == "ctrl+a"
    assert any("inside tmux: the pane prefix is ctrl+a" in n and "[keys.root]" in n for n in settings.notices)
    # A prefix the operator chose stays, with a word about tmux.
    chosen = prepare(Config(keys={"root": {"pane-prefix": "ctrl+b"}}))
    assert chosen.keys["pane-prefix"] == "ctrl+b"
    assert any("tmux's prefix too" in n for n in chosen.notices)
    # A keymap whose prefix is not tmux's is left alone.
    assert prepare(Config(), keymap="vim").keys["pane-prefix"] == "ctrl+w"
    monkeypatch.delenv("TMUX")
    assert prepare(Config()).keys["pane-prefix"] == "ctrl+b"
