"""Textual ``Binding`` objects made from the action table, so each carries its keymap id."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from console.tui.settings.actions import ActionSpec, in_scope


def binding(spec: ActionSpec, *, priority: bool = False) -> Binding:
    short = spec.label or spec.description.split(" (")[0]
    return Binding(
        spec.keys, spec.action, short, show=spec.show, id=spec.id, priority=priority, tooltip=spec.description
    )


def bindings(scope: str) -> list[BindingType]:
    return [
        binding(spec, priority=spec.id == "command-palette" or spec.moves_focus) for spec in in_scope(scope)
    ]
