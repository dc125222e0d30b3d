"""Small dialogs: ask for a line of text (a note, an expiry) or a yes/no."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from console.tui.settings.bindings import bindings


class TextPrompt(ModalScreen[str | None]):
    CONTEXT = "modal"
    """One line of input; ``check`` returns an error message or None. Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = bindings("modal")
    CSS_PATH = "prompts.tcss"

    def __init__(
        self,
        title: str,
        help_text: str,
        *,
        placeholder: str = "",
        value: str = "",
        check: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.help_text = help_text
        self.placeholder = placeholder
        self.initial = value
        self.check = check

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text), classes="prompt-title")
            yield Static(Text(self.help_text), classes="prompt-help")
            yield Input(value=self.initial, placeholder=self.placeholder, id="prompt-input")
            yield Static("", classes="prompt-error", id="prompt-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        problem = self.check(event.value) if self.check else None
        if problem:
            self.query_one("#prompt-error", Static).update(Text(problem))
            return
        self.dismiss(event.value)

    def action_dismiss_modal(self) -> None:
        self.dismiss(None)


class ConfirmPrompt(ModalScreen[bool]):
    CONTEXT = "confirm"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings("modal"), *bindings("confirm")]
    CSS_PATH = "prompts.tcss"

    def __init__(self, title: str, help_text: Text | str, yes: str = "Yes") -> None:
        super().__init__()
        self.title_text = title
        self.help_text = help_text if isinstance(help_text, Text) else Text(help_text)
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text), classes="prompt-title")
            yield Static(self.help_text, classes="prompt-help")
            with Horizontal():
                yield Button("Cancel (n)", id="no")
                yield Button(f"{self.yes} (y)", id="yes", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    def action_dismiss_modal(self) -> None:
        self.dismiss(False)
