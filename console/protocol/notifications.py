"""The notifications a call streams besides its answer, typed: one msgspec Struct each.

Why: ``event`` notifications (console/protocol/events.py) and every answer
(console/protocol/results.py) are checked at the socket; the output an attached session
or a streamed ``operation.exec`` sends was the one part of the wire a client still read
as a dict, where a daemon of another version showed up as a ``KeyError`` inside a pane.
The daemon builds these Structs, the clients decode each notification into its Struct
before a handler sees it (:func:`decode_notification`), and docs/protocol.md
("Attaching", ``operation.exec``) describes the same keys.

Unknown keys are allowed, as in results: a newer daemon may add one. A notification this
module does not know is passed on as it came (``None`` from :func:`decode_notification`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from console.protocol.invalid import problem


class Notification(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every notification's params."""


class SessionOutput(Notification, frozen=True, kw_only=True):
    """Bytes an attached session wrote, from ``offset`` in its stream."""

    session: str
    offset: int
    data_base64: str

    def decoded(self) -> bytes:
        """The bytes, decoded strictly (by msgspec, in C: a flood's every byte passes
        here, and the standard library's base64 takes several times as long);
        :class:`NotificationError` when ``data_base64`` is not base64."""
        try:
            return msgspec.convert(self.data_base64, bytes)
        except msgspec.ValidationError:
            raise NotificationError(
                "malformed session.output notification: data_base64 is not base64"
            ) from None


class SessionOutputBytes(Notification, frozen=True, kw_only=True, rename={"data": "data_base64"}):
    """:class:`SessionOutput` as the daemon writes it: the same JSON, with msgspec
    base64-encoding ``data`` into the frame as it encodes it (one pass in C over a
    flood's every byte, instead of a base64 string built first and then copied).
    Clients decode :class:`SessionOutput`."""

    session: str
    offset: int
    data: bytes


class SessionSnapshot(Notification, frozen=True, kw_only=True):
    """The screen as it is now, for a client that fell behind (its pending output was
    dropped): start over from it at ``offset``."""

    session: str
    offset: int
    cols: int
    rows: int
    snapshot_base64: str


class SessionResized(Notification, frozen=True, kw_only=True):
    session: str
    offset: int
    cols: int
    rows: int


class SessionEnded(Notification, frozen=True, kw_only=True):
    """Nothing follows: the session exited (``reason`` "exited"), was killed or lost."""

    session: str
    offset: int
    reason: str


class ExecOutput(Notification, frozen=True, kw_only=True):
    """Output of a streamed ``operation.exec``/``operation.run`` as the command writes it."""

    request_id: str
    stream: Literal["stdout", "stderr"]
    offset: int
    data_base64: str


NOTIFICATIONS: dict[str, type[Notification]] = {
    "session.output": SessionOutput,
    "session.snapshot": SessionSnapshot,
    "session.resized": SessionResized,
    "session.ended": SessionEnded,
    "output": ExecOutput,
}
"""Every notification but ``event``, by method name."""


class _OutputFrame(msgspec.Struct, frozen=True):
    jsonrpc: Literal["2.0"]
    method: Literal["session.output"]
    params: SessionOutput


_output_frame = msgspec.json.Decoder(_OutputFrame)
_frame_encoder = msgspec.json.Encoder()

# How the daemon's session.output frames begin (console/protocol/jsonrpc.py writes
# "jsonrpc", "method", "params" in that order): only such a frame is tried by
# exact_session_output.
SESSION_OUTPUT_PREFIX = b'{"jsonrpc":"2.0","method":"session.output","params":{'


def exact_session_output(frame: bytes) -> SessionOutput | None:
    """``frame`` as its :class:`SessionOutput` when it is exactly what the daemon
    writes for one, byte for byte; None for anything else, which the caller decodes
    the strict way (console/contract/strictjson.py) and checks as any notification.

    A flood is made of these frames, and the strict decoder's pure-Python checks on
    each megabyte of base64 cost more than all the rest of the client's work on it.
    msgspec decodes the frame in C (it refuses lone surrogates, NaN and numbers out of
    range itself) but keeps the last of duplicate keys; so the frame must also be as
    long as the daemon's own encoding of what was decoded. That encoding is the
    shortest text of those values (no spaces, no escapes it does not need), and a
    duplicate or unknown key, an escape or a space would each make the frame longer:
    an equal length leaves nothing for two parsers to read differently.
    """
    try:
        params = _output_frame.decode(frame).params
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    bare = _OutputFrame("2.0", "session.output", msgspec.structs.replace(params, data_base64=""))
    if len(frame) != len(_frame_encoder.encode(bare)) + len(params.data_base64) + 1:  # + its newline
        return None
    return params


class NotificationError(ValueError):
    """A notification that is not what the protocol says: names the method and the field,
    never the value."""


def decode_notification(method: str, params: Any) -> Notification | None:
    """``params`` (decoded JSON) checked against ``method``'s Struct and converted to it;
    None for a method this protocol does not know."""
    cls = NOTIFICATIONS.get(method)
    if cls is None:
        return None
    try:
        return msgspec.convert(params, cls)
    except msgspec.ValidationError as exc:
        what, _ = problem(exc)
        raise NotificationError(f"malformed {method} notification from the daemon: {what}") from None
