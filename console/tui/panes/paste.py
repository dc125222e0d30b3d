"""Pasting into a terminal pane, confirmed first when the text could run or hide something.

Paste arrives as bracketed paste from the operator's terminal; text that could run or
hide something unseen is shown, escaped, and confirmed first: any line break (CR as
tmux and most terminals send it, CRLF, LF) where the program does not use bracketed
paste, any other control character (ESC included, so an embedded bracketed-paste end
marker), bidi controls and invisible characters (``console.terminal.paste_concerns``).
If the program switches bracketed paste while the question is open, nothing is sent.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual import events

from console.contract.inert import inert
from console.terminal import encode_paste, paste_concerns
from console.tui.panes.view import PaneView

PASTE_SHOWN_CHARS = 1500
_BREAK = re.compile("(\r\n|[\r\n\u2028\u2029])")


class PasteConfirm(PaneView):
    """The pane's paste: sent as the program expects it, after a question when it must."""

    async def on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()
        self.paste(event.text)

    def paste(self, text: str) -> None:
        """Paste ``text`` into the program, after asking when it could run or hide
        something unseen (see :func:`console.terminal.paste_concerns`)."""
        if not text:
            return
        if self.state.copy is not None:
            self.say("in copy mode nothing is sent: leave it first (q)", "warning")
            return
        if self.paused:
            self.say(self.PAUSED_SAY, "warning")
            return
        if not self.link.writable:
            self.say(
                "this pane is read-only" if self.link.read_only else "the session is not running", "warning"
            )
            return
        bracketed = self._bracketed()
        concerns = paste_concerns(text, bracketed)
        if not concerns:
            self._send_paste(text, bracketed)
            return
        from console.tui.screens.prompts import ConfirmPrompt

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            if self._bracketed() != bracketed:
                # What was shown no longer holds (a program that stopped bracketing
                # would run every line): ask again rather than send.
                self.say("the program changed its paste mode meanwhile; paste again", "warning")
                return
            self._send_paste(text, bracketed)

        self.app.push_screen(
            ConfirmPrompt(
                "Paste this into the session?", paste_preview(text, bracketed, concerns), yes="Paste"
            ),
            answered,
        )

    def _bracketed(self) -> bool:
        screen = self.link.screen
        return screen is not None and screen.modes.bracketed_paste

    def _send_paste(self, text: str, bracketed: bool) -> None:
        if self.state.scrolling:
            self.leave_scroll()
        self.link.send(encode_paste(text, bracketed))

    def action_paste_copied(self) -> None:
        text = self.app.clipboard
        if not text:
            self.say("nothing copied yet", "warning")
            return
        self.paste(text)


def paste_preview(text: str, bracketed: bool, concerns: list[str]) -> Text:
    """The confirmation's body: why it asks, then the paste with every control and
    invisible character escaped (a line break shows as its escape, then breaks the
    line). Plain ``Text``: nothing in the paste is ever read as markup."""
    breaks = len(_BREAK.findall(text))
    shown = Text(
        f"{len(text)} characters, {breaks} line break{'s' if breaks != 1 else ''}; the program "
        f"{'uses' if bracketed else 'does not use'} bracketed paste.\n"
    )
    for concern in concerns:
        shown.append(f"• {concern}\n", "italic")
    shown.append("\n")
    for piece in _BREAK.split(text[:PASTE_SHOWN_CHARS]):
        if _BREAK.fullmatch(piece):
            shown.append(inert(piece), "reverse")
            shown.append("\n")
        elif piece:
            shown.append(inert(piece), "bold")
    if len(text) > PASTE_SHOWN_CHARS:
        shown.append(f"\n… {len(text) - PASTE_SHOWN_CHARS} more characters")
    return shown
