"""The egress broker: every connection out of a sandbox, decided by domain, on the host.

Each sandboxed run with network (an approved operation asking `external_network`, an
agent CLI started by ``agent-console run``, any confined session) gets a Unix socket of
its own here (:meth:`EgressService.open`), bound into its sandbox. The bridge there
(console/sandbox/bridge.py) listens on the sandbox's loopback for its programs' proxy
connections and hands that listener over this socket: from then on the broker accepts
the programs' connections itself (:meth:`EgressService._take_listener` checks it is a
listening TCP socket, one per run). If the hand-over fails, the bridge carries each
connection to the Unix socket instead. Which socket the listener or a connection
arrives on says which run it is for; nothing the program sends can say otherwise.

For each connection:

1. read the proxy request (proxy.py): HTTP CONNECT, absolute-form HTTP or SOCKS5;
2. the name and port against the policy's lists, its workspace's and its agent's
   (console/policy/network.py): deny wins, then allow; a port not allowed is refused;
3. the name resolved **here** (the sandbox has no resolver): every address it has must
   be fit for a public name (no loopback, private, link-local, metadata) unless
   `network.private` names it, and the connection goes to the address that was checked,
   never to a name resolved again;
4. a name on no list is the operator's: an approval item in the queue like any request
   (an operation ``connect <host>`` asking `external_network(<host>)`: per domain and
   workspace, approved once, for the agent's session or always, or denied with a reason)
   while the connection waits; a client that hangs up withdraws it;
5. the decision, the address and the port go into the history (a ``connection`` event),
   committed before anything is sent upstream (the decisions of one pass of the event
   loop share a commit; one that cannot be committed refuses its connections); then
   the bytes are carried as they are.

A refused connection is answered with a 403 that says why (or SOCKS5's "not allowed").
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import itertools
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.operation import Kind as OpKind
from console.contract.operation import Operation, Origin
from console.daemon.egress import proxy, relay
from console.daemon.egress.proxy import Kind, Target
from console.daemon.policy_source import PolicySource
from console.locations import ensure_private_dir
from console.policy.config import NetworkMode, PolicyConfig
from console.policy.network import IPAddress, Rules, Verdict, address_of
from console.protocol.results import OperationDecision
from console.protocol.status import EgressStatus
from console.sandbox.bridge import HANDOVER, HANDOVER_OK  # the bridge's words, one copy
from console.store import Event, Store, StoreUnavailable, connection_event

if TYPE_CHECKING:
    from console.daemon.broker import Broker

log = logging.getLogger("agent-console.egress")

CONNECT_TIMEOUT_S = 15.0
BACKLOG = 512  # connections a run's socket holds before the loop takes them
ACCEPT_RETRY_S = 1.0  # after an accept that failed for want of descriptors
# How names become addresses: the host's own resolver (getaddrinfo) unless given another.
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]

TOOL = "network"
_Socket = socket.socket  # (EgressRun has a field named socket)


@dataclass(frozen=True)
class RunContext:
    """What a run's connections are decided against."""

    workspace: str
    agent_id: str = ""  # the identity its approvals and session grants belong to
    agent_name: str = ""  # the agent profile (console/policy/agents.py), "" for none
    label: str = ""  # who connects, for the operator ("claude in s-…", "request r-…")
    session_id: str = ""  # the console session it runs in, if any
    request_id: str = ""  # the approved request it runs for, if any
    # Names allowed for this run beyond the lists: `external_network(<host>)` it was approved with.
    also_allow: tuple[str, ...] = ()


@dataclass
class EgressRun:
    """One run's socket; close it when the run ends."""

    id: str
    socket: str
    context: RunContext
    listener: _Socket | None = None
    # The sandbox's own listener on its loopback, once the bridge handed it over.
    tcp_listener: _Socket | None = None
    clients: set[relay.Client] = field(default_factory=set)
    owner: int = 0  # the broker's owner number for this run's approval items


def _listening_tcp(fd: int) -> _Socket | None:
    """``fd`` as a listening TCP socket (the descriptor is the result's), or closed and None
    when it is anything else: a file, a Unix or datagram socket, a connected one."""
    try:
        sock = _Socket(fileno=fd)
    except OSError:  # not a socket at all
        os.close(fd)
        return None
    try:
        if (
            sock.family in (socket.AF_INET, socket.AF_INET6)
            and sock.type == socket.SOCK_STREAM
            and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        ):
            sock.set_inheritable(False)
            return sock
    except OSError:
        pass
    sock.close()
    return None


# A name that is an address already, as one (None for a name): the same few, again and again.
_literal = functools.lru_cache(maxsize=4096)(address_of)


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    literal = address_of(host)
    if literal is not None:
        return [literal]
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[IPAddress] = []
    for _family, _type, _proto, _canon, addr in infos:
        found = address_of(str(addr[0]).split("%", 1)[0])
        if found is not None and found not in out:
            out.append(found)
    return out


@dataclass(frozen=True, slots=True)
class _Decided:
    """A connection's decision, as recorded: the address is the one to connect to."""

    allowed: bool
    why: str
    source: str  # policy, address, resolver, or the operator's (grant, operator, timeout...)
    request_id: str = ""  # the approval item that decided it, if any
    address: IPAddress | None = None


class _Decider:
    """One context's rules, with what they said about each name and address already seen:
    the lists are fixed for as long as the policy is, and a busy run connects to the same
    few names again and again."""

    LIMIT = 4096

    def __init__(self, config: PolicyConfig, rules: Rules) -> None:
        self.config = config
        self.rules = rules
        self._hosts: dict[tuple[str, int], tuple[Verdict, str]] = {}
        self._addresses: dict[tuple[str, IPAddress], str] = {}

    def host_verdict(self, host: str, port: int) -> tuple[Verdict, str]:
        key = (host, port)
        found = self._hosts.get(key)
        if found is None:
            if len(self._hosts) >= self.LIMIT:
                self._hosts.clear()
            found = self._hosts[key] = self.rules.host_verdict(host, port)
        return found

    def address_refusal(self, host: str, addr: IPAddress) -> str:
        key = (host, addr)
        found = self._addresses.get(key)
        if found is None:
            if len(self._addresses) >= self.LIMIT:
                self._addresses.clear()
            found = self._addresses[key] = self.rules.address_refusal(host, addr)
        return found


class _Records:
    """Connection decisions on their way into the history, committed together.

    Every decision made in one pass of the event loop goes into one append (one
    transaction, one answer from the store's writer), and each connection waits for it
    before anything goes upstream: under load the store's work and the loop's wake-ups
    are per batch, not per connection. A batch the store cannot commit fails every
    connection in it (they are refused)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.events: list[Event] = []
        self.waiters: list[asyncio.Future[None]] = []

    def record(self, event: Event) -> asyncio.Future[None]:
        """Resolves once ``event`` is committed; fails if it cannot be."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        if not self.events:
            loop.call_soon(self._flush, loop)
        self.events.append(event)
        self.waiters.append(waiter)
        return waiter

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        events, waiters = self.events, self.waiters
        self.events, self.waiters = [], []
        try:
            done = self.store.append(*events, search_later=True)
        except Exception as exc:
            self._settle(waiters, exc)
            return

        def answered(future: Future[list[int]]) -> None:  # in the store's writer thread
            try:
                failure = future.exception()
            except CancelledError:
                failure = StoreUnavailable("internal", "the history write was cancelled")
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(self._settle, waiters, failure)

        done.add_done_callback(answered)

    @staticmethod
    def _settle(waiters: list[asyncio.Future[None]], failure: BaseException | None) -> None:
        for waiter in waiters:
            if waiter.done():
                continue  # its connection is gone
            if failure is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(failure)


_owners = itertools.count(-1, -1)  # approval owners apart from connections (which count up)


class EgressService:
    def __init__(
        self,
        runtime_dir: str,
        policy: PolicySource,
        store: Store,
        broker: Broker,
        *,
        resolver: Resolver = system_resolver,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.dir = os.path.join(runtime_dir, "egress")
        self.policy = policy
        self.store = store
        self.broker = broker
        self.resolver = resolver
        self.clock = clock
        self.runs: dict[str, EgressRun] = {}
        self._rules: dict[tuple[str, str, tuple[str, ...]], _Decider] = {}
        self._records = _Records(store)
        self._poller: relay.Poller | None = None  # the relay's sockets' (made with the first run)
        self.counts = {"allowed": 0, "refused": 0, "asked": 0}

    def status(self) -> EgressStatus:
        return EgressStatus(runs=len(self.runs), **self.counts)

    # ------------------------------------------------------------------ runs

    async def open(self, context: RunContext) -> EgressRun:
        """A socket for one run (in the runtime directory, private)."""
        ensure_private_dir(Path(self.dir))
        run_id = "e-" + secrets.token_hex(6)
        path = os.path.join(self.dir, run_id + ".sock")
        run = EgressRun(run_id, path, context, owner=next(_owners))
        loop = asyncio.get_running_loop()
        if self._poller is None or self._poller.loop is not loop or self._poller.epoll.closed:
            self._poller = relay.Poller(loop)

        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            old = os.umask(0o077)
            try:
                listener.bind(path)
            finally:
                os.umask(old)
            listener.listen(BACKLOG)
            listener.setblocking(False)
            loop.add_reader(listener.fileno(), self._accept, run, listener, self._poller)
        except BaseException:
            listener.close()
            raise
        run.listener = listener
        self.runs[run_id] = run
        return run

    def _accept(self, run: EgressRun, listener: socket.socket, poller: relay.Poller) -> None:
        """Take the connections waiting on a run's socket (as many as there are, up to
        the backlog: one wake-up of the loop for a burst)."""
        for _ in range(BACKLOG):
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:
                loop = asyncio.get_running_loop()
                loop.remove_reader(listener.fileno())
                if exc.errno == errno.EINVAL and listener is run.tcp_listener:
                    # The sandbox stopped its listener (it holds it too): nothing more comes.
                    log.warning("egress: %s: the sandbox's listener no longer listens", run.id)
                    run.tcp_listener = None
                    listener.close()
                    return
                # Out of descriptors (or memory): stop taking connections for a moment
                # rather than spin; the kernel keeps them in the backlog meanwhile.
                log.warning("egress: cannot accept a connection: %s", exc)
                loop.call_later(ACCEPT_RETRY_S, self._resume_accepting, run, listener, poller)
                return
            try:
                sock.setblocking(False)
                handover = None
                if listener is run.listener:
                    handover = functools.partial(self._take_listener, run, poller)
                else:  # a program's own TCP connection: its requests go out as they come
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                made = relay.Client(
                    sock,
                    poller,
                    lambda target, c: self._handle(run, target, c),
                    run.clients.discard,
                    handover,
                )
            except BaseException:
                sock.close()
                raise
            run.clients.add(made)

    def _resume_accepting(self, run: EgressRun, listener: socket.socket, poller: relay.Poller) -> None:
        if listener in (run.listener, run.tcp_listener) and self.runs.get(run.id) is run:
            asyncio.get_running_loop().add_reader(listener.fileno(), self._accept, run, listener, poller)

    def _take_listener(
        self, run: EgressRun, poller: relay.Poller, client: relay.Client, data: bytes, fds: list[int]
    ) -> None:
        """The bridge gives the sandbox's listener: accept its programs' connections here,
        with no bridge between (one process and one hop fewer each). Only one, only a
        listening TCP socket, only with the hand-over's words; anything else is closed and
        the bridge told why (it then carries the connections itself)."""
        why, listener = "", None
        try:
            if data != HANDOVER or len(fds) != 1:
                why = "not a listener hand-over"
            elif run.listener is None:
                why = "this run has ended"
            elif run.tcp_listener is not None:
                why = "this run has its listener already"
            else:
                listener = _listening_tcp(fds.pop())
                if listener is None:
                    why = "not a listening TCP socket"
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if listener is None:
            log.warning("egress: %s refused a hand-over: %s", run.id, why)
            client.refuse(f"no: {why}\n".encode())
            return
        listener.setblocking(False)
        run.tcp_listener = listener
        asyncio.get_running_loop().add_reader(listener.fileno(), self._accept, run, listener, poller)
        client.refuse(HANDOVER_OK)

    async def close(self, run: EgressRun) -> None:
        self.runs.pop(run.id, None)
        for listener in (run.listener, run.tcp_listener):
            if listener is not None:
                asyncio.get_running_loop().remove_reader(listener.fileno())
                listener.close()
        run.listener = run.tcp_listener = None
        for client in list(run.clients):
            if client.task is not None:
                client.task.cancel()
            client.close()
        await self.broker.connection_closed(run.owner)
        with contextlib.suppress(OSError):
            os.unlink(run.socket)

    async def close_all(self) -> None:
        for run in list(self.runs.values()):
            await self.close(run)
        if self._poller is not None:
            self._poller.close()
            self._poller = None

    # ------------------------------------------------------------------ one connection

    def rules(self, context: RunContext) -> Rules:
        return self._decider(context).rules

    def _decider(self, context: RunContext) -> _Decider:
        """The rules for a run's context, and what they said for names seen before."""
        config = self.policy()
        key = (context.workspace, context.agent_name, context.also_allow)
        found = self._rules.get(key)
        if found is None or found.config is not config:
            if len(self._rules) > 256:
                self._rules.clear()
            agent = next((a for a in config.agents if a.name == context.agent_name), None)
            # `network = "any"` is every name (a config built without TOML may say only that).
            anything = ("*",) if config.network is NetworkMode.ANY else ()
            rules = config.network_policy.rules(
                context.workspace,
                agent_allow=(*(agent.allow if agent else ()), *context.also_allow, *anything),
                agent_deny=agent.deny if agent else (),
            )
            found = self._rules[key] = _Decider(config, rules)
        return found

    def _handle(self, run: EgressRun, target: Target, client: relay.Client) -> None:
        """Decide, record, then connect to the address that was checked and hand over to
        the relay. Without a task when nothing needs waiting for but the record (a name
        the lists deny, an address they allow or refuse): each step is a callback."""
        decided = self._decide_at_once(run, target)
        if decided is None:
            client.task = asyncio.ensure_future(self._decide_then_record(run, target, client))
        else:
            self._record(run, target, client, decided)

    def _decide_at_once(self, run: EgressRun, target: Target) -> _Decided | None:
        """What :meth:`_decide` answers when that needs no resolver and no operator; None
        when it does."""
        decider = self._decider(run.context)
        verdict, why = decider.host_verdict(target.host, target.port)
        if verdict is Verdict.DENY:
            return _Decided(False, why, "policy")
        if verdict is not Verdict.ALLOW or self.resolver is not system_resolver:
            return None
        literal = _literal(target.host)
        if literal is None:
            return None
        refused = decider.address_refusal(target.host, literal)
        if refused:
            return _Decided(False, refused, "address")
        return _Decided(True, why, "policy", address=literal)

    async def _decide_then_record(self, run: EgressRun, target: Target, client: relay.Client) -> None:
        try:
            decided = await self._decide(run, target, client.gone)
            if decided is not None:  # (None: the client went away while it waited)
                self._record(run, target, client, decided)
        except BaseException:
            client.close()
            raise

    def _record(self, run: EgressRun, target: Target, client: relay.Client, decided: _Decided) -> None:
        """The decision into the history; the connection goes on once it is committed."""
        context = run.context
        address = decided.address
        event = connection_event(
            at=self.clock(),
            host=target.host,
            port=target.port,
            address=address.compressed if address is not None and decided.allowed else "",
            protocol=target.kind.value,
            verdict="allow" if decided.allowed else "deny",
            source=decided.source,
            reason=decided.why,
            workspace_root=context.workspace,
            session_id=context.session_id,
            request_id=decided.request_id,
            agent=context.agent_id,
            label=context.label,
        )
        self._records.record(event).add_done_callback(
            functools.partial(self._recorded, target, client, decided)
        )

    def _recorded(
        self, target: Target, client: relay.Client, decided: _Decided, committed: asyncio.Future[None]
    ) -> None:
        try:
            if committed.cancelled():
                failure: BaseException | None = StoreUnavailable(
                    "internal", "the history write was cancelled"
                )
            else:
                failure = committed.exception()
            if client.phase is relay.Phase.CLOSED:
                return  # the client is gone: nothing to answer, nowhere to connect
            socks = target.kind is Kind.SOCKS5
            if failure is not None:  # nothing connects unless its decision is in the history
                log.error("store unavailable, refusing a connection to %s: %s", target.host, failure)
                why = "the console cannot record the connection (store unavailable)"
                decided = _Decided(False, why, decided.source)
            if not decided.allowed or decided.address is None:
                self.counts["refused"] += 1
                client.refuse(proxy.SOCKS5_NOT_ALLOWED if socks else proxy.refusal(403, decided.why))
                return
            self._connect(target, client, decided.address)
        except BaseException:
            client.close()
            raise

    def _connect(self, target: Target, client: relay.Client, address: IPAddress) -> None:
        """A TCP connection to the address that was checked (numeric already: nothing to
        look up); the relay waits for it to be made."""
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
        done = functools.partial(self._connected, target, client, address)
        try:
            # Requests and answers go out as they come, not held back for more.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.connect((address.compressed, target.port))
        except BlockingIOError:
            try:
                # Over loopback the handshake is done within connect() itself: no need
                # to wait for the loop to say so.
                sock.getpeername()
            except OSError:
                client.connect(sock, CONNECT_TIMEOUT_S, done)
                return
        except OSError as exc:
            sock.close()
            done(None, exc)
            return
        done(sock, None)

    def _connected(
        self,
        target: Target,
        client: relay.Client,
        address: IPAddress,
        upstream: socket.socket | None,
        error: OSError | None,
    ) -> None:
        socks = target.kind is Kind.SOCKS5
        if upstream is None:
            reason = f"cannot connect to {target.host}:{target.port} ({address.compressed}): {error}"
            client.refuse(proxy.SOCKS5_UNREACHABLE if socks else proxy.refusal(502, reason))
            return
        if client.phase is relay.Phase.CLOSED:
            upstream.close()
            return
        self.counts["allowed"] += 1
        answer = (
            proxy.CONNECT_ESTABLISHED
            if target.kind is Kind.CONNECT
            else proxy.SOCKS5_SUCCEEDED
            if socks
            else b""
        )
        client.relay(upstream, answer, target.first)

    async def _decide(self, run: EgressRun, target: Target, gone: asyncio.Future[None]) -> _Decided | None:
        """The decision and the address to connect to; None when the client left waiting."""
        context = run.context
        decider = self._decider(context)
        verdict, why = decider.host_verdict(target.host, target.port)
        source = "policy"
        request_id = ""
        address: IPAddress | None = None
        if verdict is not Verdict.DENY:
            literal = _literal(target.host) if self.resolver is system_resolver else None
            if literal is not None:
                addresses = [literal]  # nothing to resolve
            else:
                try:
                    async with asyncio.timeout(CONNECT_TIMEOUT_S):
                        addresses = await self.resolver(target.host, target.port)
                except (OSError, TimeoutError, UnicodeError):
                    addresses = []
            if not addresses:
                verdict, why, source = Verdict.DENY, f"{target.host} does not resolve", "resolver"
            for addr in addresses:
                refused = decider.address_refusal(target.host, addr)
                if refused:
                    verdict, why, source = Verdict.DENY, refused, "address"
                    break
            else:
                address = addresses[0] if addresses else None
        if verdict is Verdict.ASK:
            self.counts["asked"] += 1
            answer = await self._ask(run, target, address, gone)
            if answer is None:
                return None
            request_id = answer.request_id
            source = answer.source
            if answer.verdict == "allow":
                verdict, why = (
                    Verdict.ALLOW,
                    f"{target.host} approved ({answer.source}, {answer.reason})",
                )
            else:
                note = answer.note
                reason = answer.reason
                why = f"the operator denied {target.host} ({reason}{': ' + note if note else ''})"
                if answer.source == "timeout":
                    why = f"no answer from the operator for {target.host} in time"
                verdict = Verdict.DENY
        allowed = verdict is Verdict.ALLOW
        return _Decided(allowed, why, source, request_id, address if allowed else None)

    async def _ask(
        self, run: EgressRun, target: Target, address: IPAddress | None, gone: asyncio.Future[None]
    ) -> OperationDecision | None:
        """The operator's answer for this domain, while the client waits (None if it leaves)."""
        op = network_operation(run.context, target, address)
        submit = asyncio.ensure_future(
            self.broker.submit(op, owner=run.owner, peer_pid=0, agent=run.context.agent_id)
        )
        try:
            waiting: set[asyncio.Future[Any]] = {submit, gone}
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if submit in done:
                return submit.result()
            # Withdraw the item: the agent's connection is gone.
            for item in [p for p in self.broker.pending.values() if p.owner == run.owner and p.op is op]:
                await self.broker.cancel(item.id, owner=None, reason="agent_disconnected")
            with contextlib.suppress(Exception):
                await submit
            return None
        except asyncio.CancelledError:
            submit.cancel()
            raise


def network_operation(context: RunContext, target: Target, address: IPAddress | None) -> Operation:
    """The approval item for a domain: ``connect <host>`` asking external_network(<host>)."""
    where = f"{target.host}:{target.port}" + (f" ({address.compressed})" if address is not None else "")
    who = context.label or "a sandboxed program"
    return Operation(
        kind=OpKind.PROCESS,
        executable="connect",
        args=(target.host,),
        workspace_root=context.workspace,
        origin=Origin.BACKGROUND_TASK,
        tool=TOOL,
        capabilities=(Capability(CapabilityKind.EXTERNAL_NETWORK, target.host),),
        justification=f"{who} opens a connection to {where} through the egress broker",
        session_id=context.session_id,
    )
