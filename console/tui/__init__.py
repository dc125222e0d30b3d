"""The Textual approval console (``agent-console``).

:func:`console.tui.settings.prepare` resolves config, theme and keymap (raising a clear
error before the terminal is taken over); :class:`console.tui.app.ConsoleApp` is the
app. Modules without Textual imports (actions, config, keymaps, themefiles, shellsplit,
argdiff, untrusted, badges, pending, guard, desktop, historyquery, timefmt) hold the
logic and are tested on their own.
"""
