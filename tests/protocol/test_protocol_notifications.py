"""The notifications a call streams (session output, exec output) are typed at the socket.

A pane or `agent-console exec` gets each notification as its Struct
(console/protocol/notifications.py); one that is not what the protocol says is refused,
counted and skipped, and the connection goes on serving the notifications after it.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import time

import pytest
from support.daemon import DaemonProcess
from support.fake_daemon import client_of

from console.client import Client
from console.protocol import jsonrpc
from console.protocol.notifications import (
    NOTIFICATIONS,
    ExecOutput,
    Notification,
    NotificationError,
    SessionOutput,
    SessionOutputBytes,
    decode_notification,
    exact_session_output,
)
from console.protocol.requests import SessionsAttach, SessionsInput, SessionsKill, SessionsNew, SessionsRemove

DAEMON_POLICY = "approval_timeout_s = 60\n"

GOOD = {"session": "s1", "offset": 7, "data_base64": base64.b64encode(b"hi").decode()}
BAD = [
    {"session": "s1", "offset": "7", "data_base64": "aGk="},  # an offset that is text
    {"session": "s1", "data_base64": "aGk="},  # no offset
    {"session": 5, "offset": 1, "data_base64": "aGk="},  # a session that is no text
]


def _notes(params: list[object], method: str = "session.output") -> bytes:
    return b"".join(jsonrpc.encode(jsonrpc.notification(method, p)) for p in params)  # type: ignore[arg-type]


async def received(frames: bytes, *, after_first_s: float = 0.0) -> tuple[list[Notification], int]:
    """The ``session.output`` notifications an async client hands its handler when a daemon
    sends ``frames`` (once the first arrived, and ``after_first_s`` more, for any after it),
    and how many it refused."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(frames)
        await writer.drain()
        await reader.read()

    got: list[Notification] = []
    async with client_of(serve) as client:
        client.on_notification("session.output", got.append)
        for _ in range(200):
            if got:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(after_first_s)
        return got, client.refused_events


async def test_the_async_client_hands_a_handler_the_struct_and_skips_a_malformed_one():
    got, refused = await received(_notes([*BAD, GOOD]))
    assert got == [SessionOutput(session="s1", offset=7, data_base64=GOOD["data_base64"])]
    assert refused == len(BAD)


def test_the_blocking_client_does_the_same_and_the_answer_still_arrives():
    ours, theirs = socket.socketpair()
    theirs.sendall(_notes([*BAD, GOOD]) + jsonrpc.encode(jsonrpc.response(1, {"written": 2})))
    client = Client(ours, "agent")
    got: list[tuple[str, Notification]] = []
    try:
        assert client.call("sessions.input", {"session": "s1", "text": "x"}, lambda m, n: got.append((m, n)))
        assert got == [("session.output", decode_notification("session.output", GOOD))]
        assert client.refused_events == len(BAD)
    finally:
        ours.close()
        theirs.close()


def test_the_daemons_output_frame_is_the_protocols_session_output_byte_for_byte():
    for data in (b"", b"h", b"hi", b"hi!", bytes(range(256)) * 1000, "\x1b[31mé\x1b[0m".encode()):
        sent = jsonrpc.encode(
            jsonrpc.notification("session.output", SessionOutputBytes(session="s1", offset=7, data=data))
        )
        spec = SessionOutput(session="s1", offset=7, data_base64=base64.b64encode(data).decode("ascii"))
        assert sent == jsonrpc.encode(jsonrpc.notification("session.output", spec))
        [message], _ = jsonrpc.decode_message(sent)
        got = decode_notification("session.output", message.params)  # type: ignore[union-attr]
        assert isinstance(got, SessionOutput) and got.decoded() == data


def test_session_output_that_is_not_base64_is_refused_not_guessed():
    for text in ("aGk", "a Gk=", "aGk=\n", "aGk=!", "%%%%"):
        with pytest.raises(NotificationError, match="data_base64"):
            SessionOutput(session="s1", offset=0, data_base64=text).decoded()


def test_the_exact_daemon_frame_is_read_fast_and_anything_else_the_strict_way():
    frame = _notes([SessionOutputBytes(session="s1", offset=7, data=b"hi there")])
    [message], _ = jsonrpc.decode_message(frame)
    assert exact_session_output(frame) == decode_notification("session.output", message.params)  # type: ignore[union-attr]
    # Each differs from the daemon's encoding; the strict decoder and the Struct check
    # then say what they always say (a duplicate key is refused, not read as its last).
    others = [
        frame.replace(b'"data_base64":', b'"data_base64":"QQ==","data_base64":'),
        frame.replace(b'"offset":', b'"offset": '),
        frame.replace(b'"offset":', b'"newer":1,"offset":'),
        frame.replace(b'"session":"s1"', b'"session":"\\u00731"'),
        frame.replace(b'"session":"s1"', b'"session":"\\ud800"'),
        frame.replace(b'"offset":7', b'"offset":NaN'),
        frame[:-1] + b"\r\n",
        frame[:-2] + b',"params":{"session":"s2","offset":0,"data_base64":""}}\n',
    ]
    for other in others:
        assert exact_session_output(other) is None, other


async def test_a_frame_the_strict_decoder_refuses_is_refused_on_an_attach_stream_too():
    good = _notes([SessionOutputBytes(session="s1", offset=0, data=b"ok")])
    twice = good.replace(b'"data_base64":', b'"data_base64":"QQ==","data_base64":')
    got, _ = await received(twice + good, after_first_s=0.05)
    assert [n.decoded() for n in got if isinstance(n, SessionOutput)] == [b"ok"]


def test_every_notification_struct_allows_keys_a_newer_daemon_adds():
    for method, cls in NOTIFICATIONS.items():
        assert not cls.__struct_config__.forbid_unknown_fields, method
    out = decode_notification(
        "output", {"request_id": "r-1", "stream": "stderr", "offset": 0, "data_base64": "", "new": 1}
    )
    assert isinstance(out, ExecOutput) and out.stream == "stderr"


def test_a_real_daemons_session_output_arrives_typed(daemon: DaemonProcess):
    with daemon.operator() as op:
        sid = op.request(
            SessionsNew(unconfined=True, argv=["bash", "--norc"], cwd="/tmp", title="t")
        ).session.id
        try:
            op.request(SessionsAttach(session=sid))
            seen: list[tuple[str, Notification]] = []
            op.request(
                SessionsInput(session=sid, text="echo typed-$((40+2))\n"), lambda m, n: seen.append((m, n))
            )
            deadline = time.monotonic() + 10
            data = b""
            while b"typed-42" not in data and time.monotonic() < deadline:
                op.call("daemon.status", on_notification=lambda m, n: seen.append((m, n)))
                data = b"".join(
                    base64.b64decode(n.data_base64) for _, n in seen if isinstance(n, SessionOutput)
                )
                time.sleep(0.05)
            assert b"typed-42" in data
            assert all(
                m == "session.output" and n.session == sid for m, n in seen if isinstance(n, SessionOutput)
            )
        finally:
            op.request(SessionsKill(session=sid, grace_s=1))
            op.request(SessionsRemove(session=sid))
