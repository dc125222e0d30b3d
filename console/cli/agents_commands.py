"""`agent-console agents`: which agent waits for you, which one works, which one is done."""

from __future__ import annotations

import argparse

import msgspec

from console.cli.common import CLIError, add_state_dir, age, connect, print_json
from console.client import RPCError
from console.contract.inert import inert
from console.protocol.requests import AgentAttentionList
from console.protocol.results import AgentAttentionListResult


def attention_list(args: argparse.Namespace) -> AgentAttentionListResult:
    with connect(args, "operator") as client:
        try:
            result = client.request(AgentAttentionList())
        except RPCError as exc:
            raise CLIError(f"the daemon refused agent.attention_list: {exc.message}", 1) from None
    return result


def cmd_agents(args: argparse.Namespace) -> int:
    result = attention_list(args)
    agents = result.agents
    if args.agent:
        agents = [a for a in agents if a.agent_kind == args.agent]
    if args.json:
        print_json(msgspec.to_builtins(agents))
        return 0
    if not agents:
        print("no agent has reported its state (install the hooks: agent-console hook install claude-code)")
        return 0
    waiting = result.waiting
    print(
        f"{waiting} agent{'s' if waiting != 1 else ''} waiting for you"
        if waiting
        else "no agent waits for you"
    )
    print(f"{'AGENT':<18} {'KIND':<12} {'STATE':<16} {'SINCE':>6}  {'PROCESS':<16} {'SESSION':<38} MESSAGE")
    for a in agents:
        process = f"{a.root_pid or '-'} {inert(a.root_comm)}".strip()
        if not a.agent_alive:
            process += " (gone)"
        print(
            f"{a.agent_id:<18} {inert(a.agent_kind or '-')[:12]:<12} {a.state_text:<16} "
            f"{age(a.since):>6}  {process[:16]:<16} "
            f"{inert(a.session_id)[:38] or '-':<38} {inert(a.message)[:100]}"
        )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "agents",
        help="agents and their attention state: waiting for you, working, done",
        description="Each agent (a daemon-issued identity) and Claude Code session that reported its state "
        "through the Notification, Stop and UserPromptSubmit hooks: waiting for you (a permission dialog, "
        "or idle at the prompt), working, or done; since when, and the agent's last message (escaped).",
    )
    add_state_dir(p)
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--agent",
        metavar="KIND",
        help="only one kind of agent: claude-code, codex, copilot, gemini, opencode, acp",
    )
    p.set_defaults(func=cmd_agents)
