"""Installing the OpenCode plugin that asks the console before every tool call, and checking it.

OpenCode (1.18) loads every ``*.js`` in ``$XDG_CONFIG_HOME/opencode/plugin/``. The plugin
written here runs ``python -I -m console hook opencode`` (the absolute interpreter,
``--state-dir``, ``--timeout``) on each ``tool.execute.before`` and **throws** — OpenCode's
way to block a call, whose message the model reads — unless the hook exits 0 with an
``allow`` (then it applies the changed arguments) or a ``none`` (a tool the console leaves
to OpenCode). A hook that cannot start, crashes, prints anything else or outlives
``--timeout`` + 5 s is a block: OpenCode waits for a plugin as long as it takes, so the
plugin keeps its own deadline.

What no plugin closes: OpenCode's HTTP server and ``opencode acp`` take tool calls through
other paths (the server's permission events wait for an answer forever when nobody
answers). Host it with ``agent-console run -- opencode`` for those.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from console.adapters import installing
from console.adapters.installing import Check

AGENT = "opencode"
PLUGIN_NAME = "agent-console.js"
MARKER = "// agent-console: asks the console before every OpenCode tool call"
# The plugin kills a hook that outlives --timeout by this much, and blocks the call.
PLUGIN_GRACE_S = 5
OPEN_MODES = (
    "OpenCode's HTTP server and `opencode acp` run tools outside this plugin's reach: the safe way is "
    "agent-console run -- opencode"
)

PLUGIN = """@@MARKER@@
// Written by `agent-console hook install opencode`; `agent-console hook doctor opencode` checks it.
import { spawn } from "node:child_process";

const HOOK = @@HOOK@@;
const DEADLINE_MS = @@DEADLINE_MS@@;

function ask(call) {
  return new Promise((resolve, reject) => {
    const blocked = (why) => reject(new Error(`agent-console: ${why}; the call is blocked`));
    let child;
    try {
      child = spawn(HOOK[0], HOOK.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
    } catch (e) {
      return blocked(`the hook could not start (${e.message})`);
    }
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      blocked("the hook did not answer in time");
    }, DEADLINE_MS);
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", (e) => {
      clearTimeout(timer);
      blocked(`the hook could not run (${e.message})`);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code !== 0) return blocked(`the hook exited ${code}: ${err.trim().slice(-300)}`);
      try {
        resolve(JSON.parse(out));
      } catch (e) {
        blocked("the hook's answer is not JSON");
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(call));
  });
}

// Who waits for the person: a prompt (working), the session idle (done), a permission
// asked (waiting). These only inform: a failure is ignored, never a block.
const WAITS = new Set(["permission.asked", "permission.updated"]);

export const AgentConsole = async ({ directory, worktree }) => ({
  "chat.message": async (input) => {
    await ask({ hook_event_name: "UserPromptSubmit", session_id: input.sessionID, cwd: directory }).catch(() => {});
  },
  event: async ({ event }) => {
    const said = event.type === "session.idle" ? "Stop" : WAITS.has(event.type) ? "Notification" : null;
    if (!said) return;
    const session = (event.properties && event.properties.sessionID) || "";
    await ask({ hook_event_name: said, session_id: session, cwd: directory, notification_type: "permission_prompt" })
      .catch(() => {});
  },
  "tool.execute.before": async (input, output) => {
    const answer = await ask({
      hook_event_name: "tool.execute.before",
      tool_name: input.tool,
      session_id: input.sessionID,
      tool_input: output.args,
      cwd: directory,
      project: worktree,
    });
    if (answer && answer.decision === "none") return;
    if (!answer || answer.decision !== "allow") {
      throw new Error((answer && answer.reason) || "denied by agent-console");
    }
    if (answer.args) Object.assign(output.args, answer.args);
  },
});
"""


def plugin_dir(home: str | None) -> Path:
    if home:
        return Path(home).expanduser().absolute() / "plugin"
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "opencode" / "plugin"


def hook_argv(state_dir: Path, timeout_s: float, python: str | None = None) -> list[str]:
    return [
        python or sys.executable,
        "-I",
        "-m",
        "console",
        "hook",
        AGENT,
        "--state-dir",
        str(state_dir),
        "--timeout",
        installing.seconds(timeout_s),
    ]


def plugin_text(state_dir: Path, timeout_s: float, python: str | None = None) -> str:
    argv = hook_argv(state_dir, timeout_s, python)
    deadline_ms = int((timeout_s + PLUGIN_GRACE_S) * 1000)
    return (
        PLUGIN.replace("@@MARKER@@", MARKER)
        .replace("@@HOOK@@", json.dumps(argv))
        .replace("@@DEADLINE_MS@@", str(deadline_ms))
    )


def install(
    *, state_dir: Path, timeout_s: float, home: str | None, binary: str | None, python: str | None = None
) -> list[str]:
    path = plugin_dir(home) / PLUGIN_NAME
    backup = installing.write_atomic(path, plugin_text(state_dir, timeout_s, python))
    lines = [f"installed the agent-console plugin as {path}"]
    if backup is not None:
        lines.append(f"  the previous file is kept as {backup}")
    lines += [
        f"  hook     {' '.join(hook_argv(state_dir, timeout_s, python))}",
        f"  deadline the plugin blocks a call whose hook has not answered within {installing.seconds(timeout_s)} + "
        f"{PLUGIN_GRACE_S} s",
    ]
    return lines


def installed_argv(text: str) -> list[str] | None:
    found = re.search(r"^const HOOK = (\[.*\]);$", text, re.MULTILINE)
    if found is None:
        return None
    try:
        argv = json.loads(found.group(1))
    except ValueError:
        return None
    return argv if isinstance(argv, list) and all(isinstance(a, str) for a in argv) else None


def sample_input(cwd: Path, target: Path) -> dict[str, Any]:
    return {
        "hook_event_name": "tool.execute.before",
        "tool_name": "write",
        "session_id": "agent-console-doctor",
        "tool_input": {"filePath": str(target), "content": "x"},
        "cwd": str(cwd),
        "project": str(cwd),
    }


def doctor(*, state_dir: Path, home: str | None, binary: str | None, approval: float | None) -> list[Check]:
    path = plugin_dir(home) / PLUGIN_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [Check("risk", f"no agent-console plugin at {path}: run agent-console hook install opencode")]
    except OSError as exc:
        return [Check("risk", f"cannot read {path}: {exc.strerror or exc}")]
    argv = installed_argv(text)
    if not text.startswith(MARKER) or argv is None or len(argv) < 2:
        return [Check("risk", f"{path} is not the plugin agent-console writes: reinstall it")]
    try:
        timeout_s = float(argv[argv.index("--timeout") + 1])
    except (ValueError, IndexError):
        return [Check("risk", f"{path}: the hook has no --timeout: reinstall it")]
    python = argv[0]
    checks: list[Check] = []
    if text != plugin_text(Path(argv[argv.index("--state-dir") + 1]), timeout_s, python):
        checks.append(Check("risk", f"{path} was changed after agent-console wrote it: reinstall it"))
    checks += installing.command_checks(str(path), " ".join(argv) + " " + installing.BLOCK_TAIL, AGENT)
    import subprocess

    target = state_dir / "operator.token"
    try:
        proc = subprocess.run(
            argv,
            input=json.dumps(sample_input(Path.cwd(), target)),
            capture_output=True,
            text=True,
            timeout=timeout_s + PLUGIN_GRACE_S,
        )
        answer = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        answer = None
    if isinstance(answer, dict) and answer.get("decision") == "deny":
        checks.append(
            Check("ok", f"ran the hook on a write of {target}: deny, so the plugin throws (blocked)")
        )
    else:
        checks.append(
            Check(
                "problem",
                f"the hook did not answer a write of {target} with a deny (the plugin blocks it): {answer!r}",
            )
        )
    checks.append(Check("open", OPEN_MODES))
    return checks
