"""The Textual approval console (``agent-console``).

:func:`console.tui.settings.prepared.prepare` resolves config, theme and keymap (raising
a clear error before the terminal is taken over); :class:`console.tui.app.ConsoleApp` is
the app. The folders are by role, bottom up: ``model/`` (state and logic, neither Textual
nor Rich), ``render/`` (data into Rich ``Text``, no Textual), ``settings/`` (the action
table, config, themes, keymaps, bindings), ``widgets/`` (Widget subclasses), ``panes/`` (the terminal
pane and what serves it), ``screens/``; the top level holds the app and what serves it
as a whole. ``tests/project/test_layers.py`` enforces the rules; docs/architecture.md says why.
"""
