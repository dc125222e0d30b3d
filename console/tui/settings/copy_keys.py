"""Copy mode's two key tables, vi and emacs, as entries of the action table.

They are registered here (imported by :mod:`console.tui.settings.keymaps` before any keymap is
resolved), so keymap files and the config's ``[keys]`` rebind them like any other
binding, and a clash inside one table is reported. Each table is its own context:
copy mode reads only the chosen table, and its keys come before the pane's prefix.
"""

from __future__ import annotations

from console.tui.settings.actions import ACTIONS, CONTEXTS, ActionSpec

TABLES = ("vi", "emacs")

# op: (action on the pane, description)
_OPS: dict[str, tuple[str, str]] = {
    "left": ("copy_do('left')", "Cursor left"),
    "down": ("copy_do('down')", "Cursor down (scrolls)"),
    "up": ("copy_do('up')", "Cursor up (scrolls back)"),
    "right": ("copy_do('right')", "Cursor right"),
    "word-next": ("copy_do('word_next')", "Next word"),
    "word-back": ("copy_do('word_back')", "Previous word"),
    "word-end": ("copy_do('word_end')", "End of the word"),
    "line-start": ("copy_do('line_start')", "Start of the line"),
    "line-end": ("copy_do('line_end')", "End of the line"),
    "first-nonblank": ("copy_do('first_nonblank')", "First character of the line"),
    "top": ("copy_do('top')", "The oldest line"),
    "bottom": ("copy_do('bottom')", "The newest line"),
    "half-up": ("copy_do('half_up')", "Half a page back"),
    "half-down": ("copy_do('half_down')", "Half a page forward"),
    "page-up": ("copy_do('page_up')", "A page back"),
    "page-down": ("copy_do('page_down')", "A page forward"),
    "search-forward": ("copy_search(True)", "Search forward (newer)"),
    "search-back": ("copy_search(False)", "Search backward (older)"),
    "next-match": ("copy_do('next_match')", "Next match, the way the search went"),
    "previous-match": ("copy_do('previous_match')", "Previous match"),
    "select": ("copy_do('select')", "Start (or stop) selecting"),
    "select-line": ("copy_do('select_line')", "Select whole lines"),
    "yank": ("copy_yank", "Copy the selection (or the line) and leave copy mode"),
    "exit": ("copy_leave", "Leave copy mode"),
}

KEYS: dict[str, dict[str, str]] = {
    "vi": {
        "left": "h,left",
        "down": "j,down",
        "up": "k,up",
        "right": "l,right",
        "word-next": "w",
        "word-back": "b",
        "word-end": "e",
        "line-start": "0,home",
        "line-end": "dollar_sign,end",
        "first-nonblank": "circumflex_accent",
        "top": "g",
        "bottom": "G",
        "half-up": "ctrl+u",
        "half-down": "ctrl+d",
        "page-up": "pageup",
        "page-down": "pagedown",
        "search-forward": "slash",
        "search-back": "question_mark",
        "next-match": "n",
        "previous-match": "N",
        "select": "v,space",
        "select-line": "V",
        "yank": "y,enter",
        "exit": "q,escape",
    },
    "emacs": {
        "left": "ctrl+b,left",
        "down": "ctrl+n,down",
        "up": "ctrl+p,up",
        "right": "ctrl+f,right",
        "word-end": "alt+f",
        "word-back": "alt+b",
        "line-start": "ctrl+a,home",
        "line-end": "ctrl+e,end",
        "first-nonblank": "alt+m",
        "top": "alt+less_than_sign",
        "bottom": "alt+greater_than_sign",
        "page-up": "alt+v,pageup",
        "page-down": "ctrl+v,pagedown",
        "search-forward": "ctrl+s",
        "search-back": "ctrl+r",
        "next-match": "n",
        "previous-match": "N",
        "select": "ctrl+space,ctrl+at",
        "yank": "alt+w",
        "exit": "q,escape,ctrl+g",
    },
}


def scope(table: str) -> str:
    return f"copy-{table}"


def _register() -> None:
    known = {a.id for a in ACTIONS}
    for table in TABLES:
        CONTEXTS.setdefault(scope(table), (scope(table),))
        for op, keys in KEYS[table].items():
            binding_id = f"{scope(table)}-{op}"
            if binding_id in known:
                continue
            action, description = _OPS[op]
            ACTIONS.append(
                ActionSpec(binding_id, scope(table), keys, action, description, show=False, palette=False)
            )


_register()
