"""The pure parts of confinement: network rules, agent profiles, proxy requests, the
seccomp program, the toolchain PATH (the real daemon and bwrap: test_egress_broker.py,
tests/escapes/test_confined_sessions.py, test_agent_run.py)."""

from __future__ import annotations

import ipaddress
import os
import struct

import pytest

from console.daemon.egress.proxy import Kind, ProxyProtocolError, parse_head, parse_socks5_request, refusal
from console.policy.agents import agent_for
from console.policy.config import PolicyError, policy_from_toml
from console.policy.network import Verdict, normal_host, refused_class
from console.sandbox import seccomp
from console.sandbox.profile import caller_environment
from console.sandbox.toolchains import for_run, toolchain_path


def rules(text: str, workspace: str = "/w", agent: str = ""):
    config = policy_from_toml(text)
    profile = next((a for a in config.agents if a.name == agent), None)
    return config.network_policy.rules(
        workspace, agent_allow=profile.allow if profile else (), agent_deny=profile.deny if profile else ()
    )


def test_deny_wins_then_allow_then_the_operator_decides():
    r = rules('network = { allow = ["pypi.org", "*.npmjs.org"], deny = ["evil.npmjs.org"] }')
    assert r.host_verdict("pypi.org", 443)[0] is Verdict.ALLOW
    assert r.host_verdict("registry.npmjs.org", 443)[0] is Verdict.ALLOW
    assert r.host_verdict("npmjs.org", 443)[0] is Verdict.ASK  # *.x is below x, not x
    verdict, why = r.host_verdict("evil.npmjs.org", 443)
    assert verdict is Verdict.DENY and "deny list" in why
    assert r.host_verdict("example.com", 443)[0] is Verdict.ASK


def test_ports_are_443_and_80_unless_named_with_the_host():
    r = rules('network = { allow = ["pypi.org", "db.example.com:5432"] }')
    verdict, why = r.host_verdict("pypi.org", 22)
    assert verdict is Verdict.DENY and 'e.g. "pypi.org:22"' in why
    assert r.host_verdict("db.example.com", 5432)[0] is Verdict.ALLOW
    assert r.host_verdict("other.example", 5432)[0] is Verdict.DENY


def test_any_allows_every_name_and_none_asks_for_each():
    assert rules('network = "any"').host_verdict("anything.example", 443)[0] is Verdict.ALLOW
    assert policy_from_toml('network = "any"').network.value == "any"
    assert rules('network = "none"').host_verdict("anything.example", 443)[0] is Verdict.ASK


def test_workspace_and_agent_lists_add_to_the_policys():
    text = (
        'network = { allow = ["pypi.org"], workspace = { "/srv/site" = { allow = ["api.stripe.com"] } } }\n'
        'agents = { claude = { network = { allow = ["api.example.test"], deny = ["pypi.org"] } } }\n'
    )
    assert rules(text, "/srv/site/app").host_verdict("api.stripe.com", 443)[0] is Verdict.ALLOW
    assert rules(text, "/srv/other").host_verdict("api.stripe.com", 443)[0] is Verdict.ASK
    claude = rules(text, "/srv/other", "claude")
    assert claude.host_verdict("api.example.test", 443)[0] is Verdict.ALLOW
    assert claude.host_verdict("pypi.org", 443)[0] is Verdict.DENY


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("::1", "loopback"),
        ("fd00:ec2::254", "metadata"),
        ("fc00::1", "private"),
        ("fe80::1", "link-local"),
        ("::ffff:127.0.0.1", "loopback"),
        ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
    ],
)
def test_addresses_a_public_name_must_not_lead_to(address, why):
    assert why in refused_class(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1::1", "198.51.100.10"])
def test_public_addresses_pass(address):
    assert refused_class(ipaddress.ip_address(address)) == ""


def test_private_names_what_may_lead_to_a_private_address():
    r = rules('network = { allow = ["db.internal", "x.test"], private = ["db.internal", "10.20.0.0/16"] }')
    assert r.address_refusal("db.internal", ipaddress.ip_address("10.9.9.9")) == ""
    assert r.address_refusal("x.test", ipaddress.ip_address("10.20.1.1")) == ""
    assert "network.private" in r.address_refusal("x.test", ipaddress.ip_address("10.9.9.9"))


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('network = "some"', "network"),
        ('network = { allow = "pypi.org" }', "network.allow"),
        ('network = { allow = ["bad name"] }', "network.allow[0]"),
        ('network = { allow = ["pypi.org:99999"] }', "network.allow[0]"),
        ("network = { ports = [0] }", "network.ports"),
        ('network = { private = ["10.0.0.0/99"] }', "network.private[0]"),
        ("network = { bogus = [] }", "network.bogus"),
        ('network = { workspace = { "relative" = { allow = [] } } }', "network.workspace.'relative'"),
        ('agents = { claude = { state = ["~"] } }', "agents.claude.state[0]"),
        ('agents = { claude = { state = ["/etc"] } }', "agents.claude.state[0]"),
        ('agents = { claude = { read_only = ["~/.x/*"] } }', "agents.claude.read_only[0]"),
        ('agents = { claude = { network = { allow = ["*.x"], extra = 1 } } }', "agents.claude.network.extra"),
        ("agents = { Bad = {} }", "agents.Bad"),
        ('sandbox = { mode = "workspace-write", path = ["relative"] }', "sandbox.path[0]"),
        ('sandbox = { path = ["/a:/b"] }', "sandbox.path[0]"),
        ("sandbox = { other = 1 }", "sandbox.other"),
    ],
)
def test_invalid_entries_are_refused_naming_the_key(text, key):
    with pytest.raises(PolicyError) as err:
        policy_from_toml(text)
    assert err.value.key == key, str(err.value)


def test_names_are_plain_ascii_and_compared_in_lower_case():
    assert normal_host("PyPI.org.") == "pypi.org"
    assert normal_host("xn--bcher-kva.example") == "xn--bcher-kva.example"
    assert normal_host("bücher.example") is None
    assert normal_host("a_b.example") is None
    assert normal_host("[::1]") == "::1"


def test_agents_are_found_by_program_name_and_can_be_named():
    config = policy_from_toml('agents = { aider = { command = ["aider"], state = ["~/.aider"] } }')
    assert agent_for(config.agents, "/home/me/.local/bin/claude").name == "claude"
    assert agent_for(config.agents, "aider").state == ("~/.aider",)
    assert agent_for(config.agents, "/usr/bin/vim").name == ""
    assert agent_for(config.agents, "/usr/bin/vim", "codex").name == "codex"
    assert agent_for(config.agents, "x", "nope") is None


def test_the_proxy_request_is_read_strictly():
    target, used = parse_head(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: x\r\n\r\nEXTRA")
    assert (target.kind, target.host, target.port, used) == (Kind.CONNECT, "pypi.org", 443, 42)
    target, _ = parse_head(
        b"GET http://Example.com/p?q=1 HTTP/1.1\r\nHost: example.com\r\nProxy-Authorization: x\r\n"
        b"Connection: keep-alive\r\n\r\n"
    )
    assert (target.kind, target.host, target.port) == (Kind.HTTP, "example.com", 80)
    assert target.first == b"GET /p?q=1 HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"
    assert parse_head(b"CONNECT pypi.org:443 HTTP/1.1\r\n") is None  # not all there yet
    for bad in (
        b"GET https://x/ HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org HTTP/1.1\r\n\r\n",
        b"hello\r\n\r\n",
        b"CONNECT b\xc3\xbccher.example:443 HTTP/1.1\r\n\r\n",
    ):
        with pytest.raises(ProxyProtocolError):
            parse_head(bad)
    with pytest.raises(ProxyProtocolError, match="too long"):
        parse_head(b"GET " + b"a" * 70_000)


def test_socks5_greeting_then_request_names_resolved_by_the_broker():
    target, used = parse_head(b"\x05\x01\x00")
    assert (target.kind, target.host, used) == (Kind.SOCKS5, "", 3)
    with pytest.raises(ProxyProtocolError, match="without authentication"):
        parse_head(b"\x05\x01\x02")
    name = b"pypi.org"
    request = b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack(">H", 443)
    target, used = parse_socks5_request(request)
    assert (target.host, target.port, used) == ("pypi.org", 443, len(request))
    assert parse_socks5_request(request[:-1]) is None


def test_a_refusal_carries_its_reason_in_the_status_line_and_is_plain_ascii():
    answer = refusal(403, "the operator denied x.example (not\x1b[31m on a Tuesday)")
    head = answer.split(b"\r\n")[0]
    assert head.startswith(b"HTTP/1.1 403 agent-console: the operator denied x.example (not?[31m")
    assert all(32 <= b < 127 or b in b"\r\n" for b in answer)


def test_the_seccomp_program_is_well_formed():
    program = seccomp.program("x86_64")
    assert program is not None and len(program) % 8 == 0
    insns = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    assert insns[0] == (0x20, 0, 0, 4)  # load the architecture
    assert insns[-1][0] == 0x06 and insns[-1][3] == seccomp.SECCOMP_RET_ERRNO | 1  # EPERM
    jumps = [(i, jt, jf) for i, (code, jt, jf, _) in enumerate(insns) if code & 0x07 == 0x05]
    assert jumps and all(i + 1 + max(jt, jf) < len(insns) for i, jt, jf in jumps)  # no jump past the end
    assert seccomp.program("sparc") is None
    assert seccomp.number("ptrace", "aarch64") == 117


def test_the_toolchain_path_keeps_what_the_agent_cannot_write(tmp_path):
    good = tmp_path / "good"
    loose = tmp_path / "loose"
    for d in (good, loose):
        d.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(good, 0o755)
    os.chmod(loose, 0o777)
    path = toolchain_path(f"{good}:{loose}:relative:/nonexistent:{good}:/usr/bin", uid=os.geteuid())
    # /tmp-based test dirs are scratch space: only the system's stays.
    assert path == ("/usr/bin",) or str(good) not in path
    home = toolchain_path("~/bin:/usr/bin", home="/nonexistent-home")
    assert home == ("/usr/bin",)
    assert for_run(("/w/node_modules/.bin", "/usr/bin"), ["/w"]) == ("/usr/bin",)


def test_the_operators_environment_reaches_a_confined_session_less_what_points_outside():
    passed = dict(
        caller_environment(
            {
                "ANTHROPIC_API_KEY": "k",
                "EDITOR": "vim",
                "PATH": "/x",
                "LD_PRELOAD": "/evil.so",
                "SSH_AUTH_SOCK": "/run/user/1/ssh",
                "https_proxy": "http://corp:8080",
                "AGENT_CONSOLE_HOME": "/state",
                "BASH_FUNC_x%%": "() { :; }",
                "PYTHONPATH": "/w",
            }
        )
    )
    assert passed == {"ANTHROPIC_API_KEY": "k", "EDITOR": "vim"}
