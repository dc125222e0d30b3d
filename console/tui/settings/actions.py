"""Every action the console offers, in one table.

Key bindings, the command palette, the help screen and keymap validation are all read
from :data:`ACTIONS`, so an action exists in all four or in none. ``id`` is the Textual
binding id a keymap file names; ``scope`` is the node whose ``BINDINGS`` hold it (keys
must be unique within what is active at once, see :func:`contexts`); ``action`` is the
Textual action string run on that node. Other parts of the app add their actions by
appending :class:`ActionSpec` entries before the app starts (the sessions view and the
watch panel are added that way).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ActionSpec:
    id: str
    scope: str
    keys: str
    action: str
    description: str
    show: bool = True  # in the footer
    palette: bool = True  # in the command palette
    guarded: bool = False  # an approval: subject to the typed-ahead guard
    label: str = ""  # short footer label; the description when empty
    # It moves the keyboard focus (to a search box): handled before the focused widget
    # sees the key, so what is typed right after it lands where the focus went even when
    # the widget focused before is busy (Textual hands a key to the widget focused when it
    # arrives). The screen's check_action declines it while the box has the focus, so the
    # key is typed there instead.
    moves_focus: bool = False


ACTIONS: list[ActionSpec] = [
    # the whole app
    # help and quit are shown by the footer bar at any width (widgets/footer_bar.py), not by Footer
    ActionSpec(
        "quit",
        "app",
        "q",
        "quit",
        "Quit (the daemon and its sessions keep running)",
        label="quit",
        show=False,
    ),
    ActionSpec("help", "app", "question_mark,f1", "help", "Show the keys in force", label="keys", show=False),
    ActionSpec(
        "command-palette",
        "app",
        "ctrl+p",
        "command_palette",
        "Open the command palette",
        show=False,
        palette=False,
    ),
    ActionSpec("show-queue", "app", "1", "show('queue')", "Go to the pending queue", label="queue"),
    ActionSpec(
        "show-history",
        "app",
        "2",
        "show('history')",
        "Go to the history of decisions and denials",
        label="history",
    ),
    ActionSpec(
        "show-grants", "app", "3", "show('grants')", "Go to the grants and deny-rules", label="grants"
    ),
    ActionSpec("cycle-theme", "app", "f7", "cycle_theme", "Switch to the next theme", show=False),
    ActionSpec("cycle-keymap", "app", "f8", "cycle_keymap", "Switch to the next keymap", show=False),
    ActionSpec(
        "show-sessions",
        "app",
        "4",
        "show('sessions')",
        "Go to the sessions and their panes",
        label="sessions",
    ),
    # any list (queue, history, grants)
    ActionSpec("cursor-down", "list", "down,j", "cursor_down", "Next", show=False),
    ActionSpec("cursor-up", "list", "up,k", "cursor_up", "Previous", show=False),
    ActionSpec("page-down", "list", "pagedown", "page_down", "Page down", show=False, palette=False),
    ActionSpec("page-up", "list", "pageup", "page_up", "Page up", show=False, palette=False),
    ActionSpec("cursor-first", "list", "home", "cursor_first", "First", show=False, palette=False),
    ActionSpec("cursor-last", "list", "end", "cursor_last", "Last", show=False, palette=False),
    ActionSpec("open", "list", "enter", "open", "Open the selected row", show=False, palette=False),
    # the queue
    ActionSpec(
        "approve-once",
        "queue",
        "a",
        "approve('once')",
        "Approve this request once",
        guarded=True,
        label="approve",
    ),
    ActionSpec(
        "approve-session",
        "queue",
        "s",
        "approve('session')",
        "Approve for this agent session",
        guarded=True,
        label="session",
    ),
    ActionSpec(
        "approve-always",
        "queue",
        "A",
        "approve('always')",
        "Approve always (optional expiry)",
        guarded=True,
        label="always",
    ),
    ActionSpec(
        "approve-rule",
        "queue",
        "R",
        "approve_rule",
        "Approve and make a rule: the command's first words, this agent, this workspace",
        guarded=True,
        label="rule",
    ),
    ActionSpec(
        "mark",
        "queue",
        "space",
        "mark",
        "Mark or unmark this row: a approves the marked within the ceiling, d denies them",
        label="mark",
        show=False,
    ),
    ActionSpec("deny", "queue", "d", "deny", "Deny this request", label="deny"),
    ActionSpec(
        "deny-always", "queue", "D", "deny_always", "Deny always (add a deny-rule)", label="deny always"
    ),
    ActionSpec("deny-note", "queue", "n", "deny_note", "Deny with a note to the agent", label="deny+note"),
    ActionSpec("expand", "queue", "x", "expand", "Expand everything truncated", label="expand"),
    ActionSpec(
        "show-fingerprint", "queue", "f", "toggle_fingerprint", "Show the full fingerprint", show=False
    ),
    ActionSpec(
        "filter-queue", "queue", "slash", "filter", "Filter the queue", label="filter", moves_focus=True
    ),
    ActionSpec(
        "clear-filter", "queue", "escape", "clear_filter", "Clear the filter", show=False, palette=False
    ),
    # the history
    ActionSpec(
        "history-search", "history", "slash", "search", "Search the history", label="search", moves_focus=True
    ),
    ActionSpec(
        "history-verdict",
        "history",
        "v",
        "cycle_verdict",
        "Filter by verdict (all, allow, deny)",
        label="verdict",
    ),
    ActionSpec("history-source", "history", "o", "cycle_source", "Filter by who decided", label="source"),
    ActionSpec(
        "history-clear",
        "history",
        "escape",
        "clear_filters",
        "Clear search and filters",
        show=False,
        palette=False,
    ),
    ActionSpec(
        "history-grant", "history", "g", "grant", "Turn this decision into a standing grant", label="grant"
    ),
    ActionSpec("history-refresh", "history", "R", "refresh_history", "Reload the history", show=False),
    # one history entry
    ActionSpec(
        "entry-grant", "entry", "g", "grant", "Turn this decision into a standing grant", label="grant"
    ),
    ActionSpec(
        "entry-outcome", "entry", "o", "jump_outcome", "Jump to the outcome and file changes", label="outcome"
    ),
    ActionSpec("entry-close", "entry", "escape", "close", "Back to the history", palette=False, label="back"),
    # grants
    ActionSpec("grant-revoke", "grants", "r,delete", "revoke", "Revoke the selected grant", label="revoke"),
    ActionSpec(
        "grants-inactive",
        "grants",
        "i",
        "toggle_inactive",
        "Show or hide grants that no longer apply (revoked, expired, used)",
        label="inactive",
    ),
    # the sessions view (its list; also after the prefix in a pane, acting on that pane's session)
    ActionSpec(
        "session-new", "sessions", "n", "new_session", "Start a session (asks for the command)", label="new"
    ),
    ActionSpec(
        "session-view", "sessions", "v", "attach(True)", "Watch the selected session read-only", label="view"
    ),
    ActionSpec("session-kill", "sessions", "K", "kill", "Kill the session (TERM, then KILL)", label="kill"),
    ActionSpec(
        "session-resume",
        "sessions",
        "R",
        "resume",
        "Resume a session the tripwire paused (every process continues)",
        label="resume",
    ),
    ActionSpec(
        "session-remove", "sessions", "X", "remove", "Remove the session and its recording", label="remove"
    ),
    ActionSpec(
        "session-adopt",
        "sessions",
        "O",
        "adopt",
        "Adopt an agent's session (it outlives the agent)",
        label="adopt",
    ),
    # a terminal pane while the program has the keys (tmux's root table)
    ActionSpec(
        "pane-prefix",
        "root",
        "ctrl+b",
        "prefix",
        "Prefix: the next key is a console command (twice: send it)",
        palette=False,
        label="prefix",
    ),
    ActionSpec(
        "pane-scroll-up",
        "root",
        "shift+pageup",
        "scroll_pages(-1)",
        "Scroll back a page",
        palette=False,
        label="scroll back",
    ),
    ActionSpec(
        "pane-scroll-down",
        "root",
        "shift+pagedown",
        "scroll_pages(1)",
        "Scroll forward a page",
        show=False,
        palette=False,
    ),
    # a terminal pane: the key after the prefix (tmux's prefix table)
    ActionSpec(
        "pane-split-right",
        "prefix",
        "percent_sign",
        "split('right')",
        "Split: a new shell beside this pane",
        palette=False,
        label="split right",
    ),
    ActionSpec(
        "pane-split-down",
        "prefix",
        "quotation_mark",
        "split('down')",
        "Split: a new shell below this pane",
        palette=False,
        label="split down",
    ),
    ActionSpec("pane-next", "prefix", "o", "next_pane", "Focus the next pane", palette=False, label="next"),
    ActionSpec(
        "pane-left",
        "prefix",
        "left",
        "focus_pane('left')",
        "Focus the pane to the left",
        palette=False,
        label="move",
    ),
    ActionSpec(
        "pane-right",
        "prefix",
        "right",
        "focus_pane('right')",
        "Focus the pane to the right",
        palette=False,
        label="move",
    ),
    ActionSpec(
        "pane-up", "prefix", "up", "focus_pane('up')", "Focus the pane above", palette=False, label="move"
    ),
    ActionSpec(
        "pane-down",
        "prefix",
        "down",
        "focus_pane('down')",
        "Focus the pane below",
        palette=False,
        label="move",
    ),
    ActionSpec(
        "pane-zoom",
        "prefix",
        "z",
        "zoom",
        "Zoom this pane (again: back to the split)",
        palette=False,
        label="zoom",
    ),
    ActionSpec(
        "pane-detach",
        "prefix",
        "d,x",
        "detach",
        "Close this pane: detach (the session keeps running)",
        palette=False,
        label="detach",
    ),
    ActionSpec(
        "pane-scroll-mode",
        "prefix",
        "left_square_bracket",
        "scroll_mode",
        "Copy mode: move, search, select and yank through the scrollback",
        palette=False,
        label="copy",
    ),
    ActionSpec(
        "pane-search", "prefix", "slash", "search", "Search the scrollback", palette=False, label="search"
    ),
    ActionSpec(
        "pane-copy",
        "prefix",
        "y",
        "copy",
        "Copy the selection (or the screen) to the clipboard",
        palette=False,
        label="copy",
    ),
    ActionSpec(
        "pane-paste",
        "prefix",
        "right_square_bracket",
        "paste_copied",
        "Paste what the console copied last",
        palette=False,
        label="paste",
    ),
    ActionSpec("pane-list", "prefix", "s", "to_list", "Go to the session list", palette=False, label="list"),
    # a terminal pane scrolled back (prefix [, shift+pageup, the wheel, a search): tmux's
    # copy-mode table; the cursor keys of copy mode are copy_keys.py's copy-vi and copy-emacs
    ActionSpec(
        "scroll-up",
        "copy-mode",
        "up,k",
        "scroll_lines(-1)",
        "Scroll back a line",
        show=False,
        palette=False,
    ),
    ActionSpec(
        "scroll-down",
        "copy-mode",
        "down,j",
        "scroll_lines(1)",
        "Scroll forward a line",
        show=False,
        palette=False,
    ),
    ActionSpec(
        "scroll-page-up",
        "copy-mode",
        "pageup,b",
        "scroll_pages(-1)",
        "Scroll back a page",
        show=False,
        palette=False,
    ),
    ActionSpec(
        "scroll-page-down",
        "copy-mode",
        "pagedown,space",
        "scroll_pages(1)",
        "Scroll forward a page",
        show=False,
        palette=False,
    ),
    ActionSpec(
        "scroll-top", "copy-mode", "home,g", "scroll_top", "The oldest line", show=False, palette=False
    ),
    ActionSpec(
        "scroll-bottom", "copy-mode", "end,G", "scroll_bottom", "The newest line", show=False, palette=False
    ),
    ActionSpec(
        "scroll-search", "copy-mode", "slash", "search", "Search the scrollback", show=False, palette=False
    ),
    ActionSpec(
        "scroll-next-match",
        "copy-mode",
        "n",
        "search_next(-1)",
        "Next (older) match",
        show=False,
        palette=False,
    ),
    ActionSpec(
        "scroll-previous-match",
        "copy-mode",
        "N",
        "search_next(1)",
        "Previous (newer) match",
        show=False,
        palette=False,
    ),
    ActionSpec(
        "scroll-copy",
        "copy-mode",
        "y",
        "copy",
        "Copy the selection (or the screen)",
        show=False,
        palette=False,
    ),
    ActionSpec(
        "scroll-exit",
        "copy-mode",
        "escape,q",
        "leave_scroll",
        "Back to the program",
        show=False,
        palette=False,
    ),
    # dialogs and the help screen
    ActionSpec("dismiss", "modal", "escape", "dismiss_modal", "Close", palette=False),
    ActionSpec(
        "help-close", "help", "question_mark,q", "dismiss_modal", "Close the help", show=False, palette=False
    ),
    ActionSpec("confirm-yes", "confirm", "y", "answer(True)", "Yes", palette=False),
    ActionSpec("confirm-no", "confirm", "n", "answer(False)", "No", palette=False),
    # the workspace watch panel; tripwire items answered in the queue
    ActionSpec(
        "show-watch",
        "app",
        "5",
        "show('watch')",
        "Go to the workspace watch panel",
        label="watch",
    ),
    ActionSpec(
        "watch-protected",
        "watch",
        "p",
        "toggle_protected",
        "Show protected changes only, or all",
        label="protected",
    ),
    ActionSpec("watch-diff", "watch", "d", "diff", "Show the diff of the selected change", label="diff"),
    ActionSpec("watch-refresh", "watch", "R", "refresh_watch", "Reload recent changes", show=False),
    ActionSpec(
        "tripwire-resume",
        "queue",
        "r",
        "tripwire('resume')",
        "Resume the session a tripwire paused",
        guarded=True,
        label="resume",
    ),
    ActionSpec(
        "tripwire-kill", "queue", "K", "tripwire('kill')", "Kill the session a tripwire paused", label="kill"
    ),
    ActionSpec(
        "tripwire-keep",
        "queue",
        "p",
        "tripwire('keep_paused')",
        "Keep the session paused and close the tripwire item",
        label="keep paused",
    ),
    ActionSpec(
        "record-close", "record", "escape", "close", "Back to the history", palette=False, label="back"
    ),
]

# Which scopes are active at the same time: their keys must not collide.
CONTEXTS: dict[str, tuple[str, ...]] = {
    "queue": ("app", "list", "queue"),
    "history": ("app", "list", "history"),
    "entry": ("app", "entry"),
    "grants": ("app", "list", "grants"),
    "watch": ("app", "list", "watch"),
    "record": ("app", "record"),
    "modal": ("modal",),
    "confirm": ("modal", "confirm"),
    "help": ("modal", "help"),
    "sessions": ("app", "list", "sessions"),
    # A terminal pane's tables, named as tmux names them: "root" while the program has the
    # keys, "prefix" after the prefix key (its commands, then the view's, then the app's),
    # "copy-mode" scrolled back. Keymap files may still say pane-live, pane and pane-scroll
    # (keymaps.OLD_TABLES).
    "prefix": ("app", "sessions", "prefix"),
    "root": ("root",),
    "copy-mode": ("root", "copy-mode"),
}


def by_id() -> dict[str, ActionSpec]:
    return {a.id: a for a in ACTIONS}


def in_scope(scope: str) -> list[ActionSpec]:
    return [a for a in ACTIONS if a.scope == scope]


def default_keys() -> dict[str, str]:
    return {a.id: a.keys for a in ACTIONS}


def contexts() -> dict[str, tuple[str, ...]]:
    return dict(CONTEXTS)


def scopes_of(ids: Iterable[str]) -> set[str]:
    table = by_id()
    return {table[i].scope for i in ids if i in table}
