"""Policy config, ceilings, capability diffs, grants and evaluation across modes."""

from __future__ import annotations

import pytest
from support.fakehost import FakeHost

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.operation import parse
from console.policy import (
    Effect,
    Grant,
    GrantScope,
    PolicyConfig,
    PolicyError,
    Verdict,
    evaluate,
    load_policy,
    policy_from_toml,
)
from console.policy.diff import capability_diff, ceiling

K = CapabilityKind
W = "/home/dev/project"
HOST = FakeHost()
NOW = 1_000_000.0


def op(**fields):
    base = {"kind": "process", "executable": "/usr/bin/make", "workspace_root": W}
    base.update(fields)
    return parse(base, HOST)


def config(**kw):
    """A policy from keys, trusting the test workspace's parent unless told otherwise."""
    kw.setdefault("workspaces", ["/home/dev"])
    return policy_from_toml("\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in kw.items()))


# The default policy, with the test workspace trusted (the default trusts none).
TRUSTING = PolicyConfig(workspaces=("/home/dev",))


# --- config -----------------------------------------------------------------------------


def test_defaults():
    c = PolicyConfig()
    assert (c.sandbox.value, c.network.value, c.approval.value) == ("workspace-write", "none", "on-request")
    assert "**/.git/hooks/**" in c.protected
    assert c.approval_timeout_s == 300
    assert c.tripwire.value == "alert"


def test_full_file_parses(tmp_path):
    f = tmp_path / "policy.toml"
    f.write_text(
        'sandbox = "read-only"\nnetwork = "any"\napproval = "untrusted"\n'
        'protected = [".env", "secrets/**"]\napproval_timeout_s = 30\ntripwire = "pause"\nallow_degraded = true\n'
    )
    c = load_policy(f)
    assert c.sandbox.value == "read-only"
    assert c.protected == (".env", "secrets/**")
    assert c.approval_timeout_s == 30.0
    assert c.tripwire.value == "pause"
    assert c.allow_degraded is True


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ('sandbox = "full"', "sandbox", '"read-only" | "workspace-write" | "danger-full-access"'),
        ('network = "some"', "network", '"none" | "any"'),
        ('approval = "always"', "approval", '"untrusted" | "on-request" | "never"'),
        ("approval = 3", "approval", "must be a string"),
        ("approval_timeout_s = 0", "approval_timeout_s", "between 1 and 86400"),
        ('approval_timeout_s = "5"', "approval_timeout_s", "number of seconds"),
        ("approval_timeout_s = true", "approval_timeout_s", "number of seconds"),
        ('protected = ".env"', "protected", "list of path patterns"),
        ('protected = ["/etc/passwd"]', "protected[0]", "relative"),
        ('protected = ["../x"]', "protected[0]", ".."),
        ('tripwire = "loud"', "tripwire", '"off" | "alert" | "pause"'),
        ('allow_degraded = "yes"', "allow_degraded", "true or false"),
        ('sandbx = "read-only"', "sandbx", "unknown key"),
        ("sandbox = ", "", "not valid TOML"),
    ],
)
def test_invalid_config_names_key_and_allowed_values(text, key, fragment):
    with pytest.raises(PolicyError) as info:
        policy_from_toml(text)
    assert info.value.key == key
    assert fragment in str(info.value)


def test_unreadable_policy_file(tmp_path):
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "missing.toml")


# --- ceiling and diff -------------------------------------------------------------------


def test_ceilings():
    assert set(ceiling(config(sandbox="read-only"), W)) == {
        Capability(K.FILESYSTEM_READ),
        Capability(K.PROCESS_SPAWN),
        Capability(K.ISOLATED_LOOPBACK),
    }
    assert Capability(K.WORKSPACE_WRITE, W) in ceiling(config(sandbox="workspace-write"), W)
    assert ceiling(config(sandbox="danger-full-access"), W) == (Capability(K.UNRESTRICTED),)
    assert Capability(K.EXTERNAL_NETWORK) in ceiling(config(network="any"), W)


def kinds(items):
    return {(i.capability.kind.value, i.capability.scope) for i in items}


def test_diff_splits_within_and_escalations_with_reasons():
    o = op(workspace_access="write", network="any", write_dirs=["/home/dev/.cache"])
    d = capability_diff(o, TRUSTING)
    assert kinds(d.within) == {("filesystem_read", ""), ("process_spawn", ""), ("workspace_write", W)}
    assert kinds(d.escalations) == {("external_network", ""), ("workspace_write", "/home/dev/.cache")}
    reasons = {i.capability.kind.value: i.reason for i in d.escalations}
    assert "network" in reasons["external_network"]
    assert "outside the workspace" in reasons["workspace_write"]
    assert ("isolated_loopback", "") in kinds(d.unused)
    assert ("protected_metadata", "") in kinds(d.forbidden)


def test_write_dir_inside_a_protected_path_requires_protected_metadata():
    d = capability_diff(op(write_dirs=[W + "/.git/hooks"]), TRUSTING)
    assert ("protected_metadata", W + "/.git/hooks") in kinds(d.escalations)
    assert ("workspace_write", W + "/.git/hooks") in kinds(d.escalations)
    assert any("protected path" in i.reason for i in d.escalations)


def test_write_in_read_only_sandbox_escalates():
    d = capability_diff(op(workspace_access="write"), config(sandbox="read-only"))
    assert ("workspace_write", W) in kinds(d.escalations)


def test_risky_environment_is_an_escalation():
    d = capability_diff(op(env={"LD_PRELOAD": "/tmp/x.so", "CI": "1"}), TRUSTING)
    assert kinds(d.escalations) == {("environment", "LD_PRELOAD")}


def test_danger_full_access_covers_everything():
    d = capability_diff(
        op(network="any", capabilities=[{"kind": "unrestricted"}]), config(sandbox="danger-full-access")
    )
    assert d.escalations == ()
    assert d.forbidden == ()


# --- evaluation across modes --------------------------------------------------------------

SAFE = {"executable": "/usr/bin/git", "args": ["status"], "kind": "git"}
ESCALATING = {"network": "any"}


@pytest.mark.parametrize(
    ("approval", "fields", "verdict", "reason"),
    [
        ("never", {}, "allow", "within_ceiling"),
        ("never", ESCALATING, "deny", "escalation_denied_by_policy"),
        ("on-request", {}, "allow", "within_ceiling"),
        ("on-request", ESCALATING, "review", "escalation_requires_approval"),
        ("untrusted", SAFE, "allow", "read_only_command"),
        ("untrusted", {}, "review", "untrusted_requires_approval"),
        ("untrusted", {**SAFE, **ESCALATING}, "review", "untrusted_requires_approval"),
    ],
)
def test_modes(approval, fields, verdict, reason):
    d = evaluate(op(**fields), config(approval=approval), (), NOW)
    assert (d.verdict.value, d.reason) == (verdict, reason)
    assert (d.authorization is not None) == (verdict == "allow")


@pytest.mark.parametrize(
    "fields",
    [
        {"executable": "/usr/bin/git", "args": ["-c", "core.pager=sh", "log"]},
        {"executable": "/usr/bin/git", "args": ["diff", "--output=/tmp/x"]},
        {"executable": "/usr/bin/git", "args": ["diff", "--ext-diff"]},
        {"executable": "/usr/bin/git", "args": ["push"]},
        {"executable": "/usr/bin/cat", "args": ["/etc/shadow"]},
        {"executable": "/usr/bin/cat", "args": ["../../.ssh/id_rsa"]},
        {"executable": "/usr/bin/ls", "args": ["-la"], "env": {"X": "1"}},
        {"executable": "/usr/bin/rm", "args": ["-rf", "build"]},
    ],
)
def test_untrusted_read_only_set_is_narrow(fields):
    assert evaluate(op(**fields), config(approval="untrusted"), (), NOW).verdict is Verdict.REVIEW


def test_untrusted_allows_workspace_reads():
    for fields in (
        {"executable": "/usr/bin/cat", "args": ["README.md"]},
        {"executable": "/usr/bin/ls", "args": ["-la", "src"]},
    ):
        d = evaluate(op(**fields), config(approval="untrusted"), (), NOW, resolve_path=lambda p: p)
        assert d.verdict is Verdict.ALLOW


def test_decision_carries_the_fingerprint_and_binds_the_authorization():
    o = op()
    d = evaluate(o, TRUSTING, (), NOW)
    assert d.fingerprint == o.fingerprint
    assert d.authorization.permits(o)
    assert not d.authorization.permits(op(args=["other"]))
    wire = d.to_dict()
    assert {"verdict", "reason", "fingerprint", "requested", "ceiling", "escalations"} <= set(wire)


# --- grants ---------------------------------------------------------------------------------


def grant(o, scope, **kw):
    return Grant(
        id=kw.pop("id", "g1"), fingerprint=o.fingerprint, scope=GrantScope(scope), created_at=NOW - 10, **kw
    )


def test_grant_always_allows_an_escalation():
    o = op(network="any")
    d = evaluate(o, TRUSTING, [grant(o, "always")], NOW)
    assert (d.verdict, d.reason) == (Verdict.ALLOW, "grant_always")
    assert d.authorization.source == "grant"
    assert d.authorization.grant_id == "g1"


def test_grant_for_another_fingerprint_does_nothing():
    o = op(network="any")
    other = op(network="any", args=["x"])
    assert evaluate(o, TRUSTING, [grant(other, "always")], NOW).verdict is Verdict.REVIEW


def test_expired_and_revoked_grants_do_nothing():
    o = op(network="any")
    assert evaluate(o, TRUSTING, [grant(o, "always", expires_at=NOW - 1)], NOW).verdict is Verdict.REVIEW
    assert evaluate(o, TRUSTING, [grant(o, "always", expires_at=NOW + 1)], NOW).verdict is Verdict.ALLOW
    assert evaluate(o, TRUSTING, [grant(o, "always", revoked_at=NOW - 1)], NOW).verdict is Verdict.REVIEW


def test_session_grant_needs_the_same_session():
    mine = op(network="any", session_id="s1")
    theirs = op(network="any", session_id="s2")
    nobody = op(network="any")
    g = grant(mine, "session", session_id="s1")
    assert evaluate(mine, TRUSTING, [g], NOW).reason == "grant_session"
    assert evaluate(theirs, TRUSTING, [g], NOW).verdict is Verdict.REVIEW
    assert evaluate(nobody, TRUSTING, [g], NOW).verdict is Verdict.REVIEW


def test_once_grant_is_used_up_after_one_use():
    o = op(network="any")
    assert evaluate(o, TRUSTING, [grant(o, "once")], NOW).reason == "grant_once"
    assert evaluate(o, TRUSTING, [grant(o, "once", uses=1)], NOW).verdict is Verdict.REVIEW


def test_standing_grant_is_preferred_over_once():
    o = op(network="any")
    d = evaluate(o, TRUSTING, [grant(o, "once", id="a"), grant(o, "always", id="b")], NOW)
    assert d.grant.id == "b"


def test_deny_rule_beats_grants_and_policy():
    o = op()  # within the ceiling: the policy alone would allow
    rules = [grant(o, "always", id="allow"), grant(o, "always", id="deny", effect=Effect.DENY)]
    d = evaluate(o, config(approval="never"), rules, NOW)
    assert (d.verdict, d.reason) == (Verdict.DENY, "deny_rule")
    assert d.authorization is None


def test_grant_round_trips_as_dict():
    o = op()
    g = grant(o, "session", session_id="s", expires_at=NOW + 5, note="ok")
    assert Grant.from_dict(g.to_dict()) == g


def test_a_cached_diff_is_never_reused_for_a_different_request(tmp_path):
    # The diff is cached by what makes the request, not by the fingerprint: asking the
    # same command with any one more power must still show that power.
    from dataclasses import replace

    from console.contract.host import OSHost
    from console.contract.operation import Network, WorkspaceAccess

    config = PolicyConfig(workspaces=(str(tmp_path),))
    base = parse({"kind": "process", "executable": "true", "workspace_root": str(tmp_path)}, OSHost())
    assert {c.kind.value for c in capability_diff(base, config).requested} == {
        "filesystem_read",
        "process_spawn",
    }
    variants = {
        "workspace_write": replace(base, workspace_access=WorkspaceAccess.WRITE),
        "external_network": replace(base, network=Network.ANY),
        "environment": replace(base, env=(("LD_PRELOAD", "/tmp/x.so"),)),
        "process_control": replace(base, capabilities=(Capability(CapabilityKind.PROCESS_CONTROL),)),
        "new_workspace": replace(base, args=("x",)),
    }
    for kind, op in variants.items():
        diff = capability_diff(op, config, trusted=() if kind == "new_workspace" else None)
        kinds = {cap.kind.value for cap in diff.requested}
        if kind == "new_workspace":
            assert any(item.code == "new_workspace" for item in diff.escalations), diff
        else:
            assert kind in kinds, (kind, kinds)
    # and the same request with other arguments gets the very same diff object
    assert capability_diff(replace(base, args=("other",)), config) is capability_diff(base, config)
