"""Small dialogs: ask for a line of text (a note, an expiry), a yes/no, or a yes/no with
one option to tick."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static

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


class OptionPrompt(ModalScreen[tuple[bool, bool]]):
    """A yes/no with one option (a checkbox, focused: space ticks it): the answer is
    (yes, option ticked). ``option_enabled`` False shows it greyed out and unticked, with
    ``help_text`` saying why."""

    CONTEXT = "confirm"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings("modal"), *bindings("confirm")]
    CSS_PATH = "prompts.tcss"

    def __init__(
        self,
        title: str,
        help_text: Text | str,
        *,
        yes: str,
        option: str,
        option_on: bool,
        option_enabled: bool = True,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.help_text = help_text if isinstance(help_text, Text) else Text(help_text)
        self.yes = yes
        self.option = option
        self.option_on = option_on and option_enabled
        self.option_enabled = option_enabled

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text), classes="prompt-title")
            yield Static(self.help_text, classes="prompt-help")
            yield Checkbox(Text(self.option), self.option_on, id="option", disabled=not self.option_enabled)
            with Horizontal():
                yield Button("Cancel (n)", id="no")
                yield Button(f"{self.yes} (y)", id="yes", variant="error")

    def on_mount(self) -> None:
        if self.option_enabled:
            self.query_one("#option", Checkbox).focus()

    @property
    def ticked(self) -> bool:
        return self.option_enabled and self.query_one("#option", Checkbox).value

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss((event.button.id == "yes", self.ticked))

    def action_answer(self, value: bool) -> None:
        self.dismiss((value, self.ticked))

    def action_dismiss_modal(self) -> None:
        self.dismiss((False, False))
