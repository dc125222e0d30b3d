"""Content binding follows a command through wrappers, interpreter options, make and
sourced files (console/contract/content.py), with the fixed fake host."""

from __future__ import annotations

import hashlib
import posixpath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fakehost import FakeHost

from console.contract import content as c
from console.contract.operation import parse
from console.contract.problem import InvalidInput

W = "/home/dev/project"
BUILD = f"{W}/build.sh"
FILES = {
    BUILD: "#!/bin/sh\n. ./lib.sh\necho build\n",
    f"{W}/lib.sh": "echo lib\n",
    f"{W}/x.py": "print(1)\n",
    f"{W}/tool.py": "print(2)\n",
    f"{W}/pkg/__init__.py": "",
    f"{W}/pkg/cli.py": "",
    f"{W}/Makefile": "include common.mk\n-include local.mk\nall:\n\tinclude-not-a-directive\n",
    f"{W}/common.mk": "sinclude more.mk\n",
    f"{W}/more.mk": "X = 1\n",
    f"{W}/sub/other.mk": "all:\n",
    f"{W}/pre.js": "",
    "/opt/scripts/deploy.sh": "echo deploy\n",
    f"{W}/bin/tool": "#!/opt/interp/bin/run\n",
}


def digest(path: str) -> str:
    return hashlib.sha256(FILES[path].encode()).hexdigest()


def bound(executable: str, *args: str, cwd: str = ".", files: dict[str, str] | None = None):
    op = parse(
        {"kind": "process", "executable": executable, "args": list(args), "workspace_root": W, "cwd": cwd},
        FakeHost(FILES if files is None else files),
    )
    return dict(op.content), op.unbound


def test_bash_rcfile_dev_null_binds_the_script():
    content, unbound = bound("bash", "--rcfile", "/dev/null", "build.sh")
    assert content[BUILD] == digest(BUILD)
    assert content["/dev/null"] is None
    assert not unbound


def test_init_file_binds_both_the_init_file_and_the_script():
    content, _ = bound("bash", "--init-file", "lib.sh", "build.sh")
    assert content[f"{W}/lib.sh"] == digest(f"{W}/lib.sh")
    assert content[BUILD] == digest(BUILD)


@pytest.mark.parametrize(
    "argv",
    [
        ("env", "bash", "build.sh"),
        ("env", "-i", "FOO=1", "-u", "BAR", "bash", "build.sh"),
        ("env", "-S", "bash -e", "build.sh"),
        ("timeout", "60", "./build.sh"),
        ("timeout", "-s", "KILL", "-k", "5", "60", "./build.sh"),
        ("nice", "./build.sh"),
        ("nice", "-n", "10", "./build.sh"),
        ("nohup", "./build.sh"),
        ("stdbuf", "-oL", "-e", "0", "./build.sh"),
        ("ionice", "-c", "3", "./build.sh"),
        ("setsid", "-f", "./build.sh"),
        ("time", "-p", "./build.sh"),
        ("sh", "-c", "./build.sh"),
        ("bash", "-ec", "exec ./build.sh"),
        ("sh", "-c", "command ./build.sh"),
        ("sh", "-c", "make -q || ./build.sh && echo done"),
        ("sh", "-c", "FOO=1 bash build.sh"),
        ("env", "nice", "timeout", "5", "bash", "-x", "build.sh"),
    ],
)
def test_wrappers_are_unwrapped_to_the_script(argv):
    content, _ = bound(*argv)
    assert content[BUILD] == digest(BUILD)
    assert content[f"{W}/lib.sh"] == digest(f"{W}/lib.sh")  # what the script sources


def test_env_python_binds_the_script():
    content, unbound = bound("env", "python3", "x.py")
    assert content == {f"{W}/x.py": digest(f"{W}/x.py")}
    assert not unbound


def test_python_options_with_values_do_not_hide_the_script():
    assert f"{W}/tool.py" in bound("python3", "-X", "dev", "-W", "ignore", "-u", "tool.py")[0]
    assert f"{W}/tool.py" in bound("python3", "-Wignore", "-B", "tool.py")[0]


def test_python_module_from_the_working_directory_is_bound():
    content, unbound = bound("python3", "-m", "pkg.cli")
    assert content[f"{W}/pkg/__init__.py"] is not None
    assert content[f"{W}/pkg/cli.py"] is not None
    assert not unbound


def test_python_module_found_elsewhere_is_reported_unbound():
    content, unbound = bound("python3", "-m", "pytest")
    # A local pytest.py created later would shadow it: that changes the fingerprint.
    assert content[f"{W}/pytest.py"] is None
    assert unbound == (c.PYTHON_MODULE,)


def test_a_module_name_of_a_thousand_parts_is_not_followed():
    # Each part is a directory to resolve: parsing one such request took the daemon's
    # loop seconds (about a million path lookups).
    host = FakeHost(FILES)
    calls = 0
    resolve = host.resolve

    def counted(path: str):
        nonlocal calls
        calls += 1
        return resolve(path)

    host.resolve = counted  # type: ignore[method-assign]
    op = parse(
        {
            "kind": "process",
            "executable": "python3",
            "args": ["-m", ".".join(["a"] * 1000)],
            "workspace_root": W,
        },
        host,
    )
    assert op.unbound == (c.PYTHON_MODULE,)
    assert calls < 20, calls


def test_make_binds_the_makefile_and_its_literal_includes():
    content, unbound = bound("make", "all")
    assert content[f"{W}/GNUmakefile"] is None  # read first if it ever appears
    assert content[f"{W}/makefile"] is None
    assert content[f"{W}/Makefile"] == digest(f"{W}/Makefile")
    assert content[f"{W}/common.mk"] == digest(f"{W}/common.mk")
    assert content[f"{W}/more.mk"] == digest(f"{W}/more.mk")  # included by an include
    assert content[f"{W}/local.mk"] is None
    assert not unbound


def test_make_file_and_directory_options():
    content, _ = bound("make", "-C", "sub", "-f", "other.mk", "-j4")
    assert content == {f"{W}/sub/other.mk": digest(f"{W}/sub/other.mk")}
    content, _ = bound("make", "--directory=sub", "--file=other.mk")
    assert f"{W}/sub/other.mk" in content


def test_make_includes_computed_at_run_time_are_reported():
    files = {**FILES, f"{W}/Makefile": "include $(wildcard *.mk)\n"}
    _, unbound = bound("make", files=files)
    assert unbound == (c.MAKE_COMPUTED,)


def test_scripts_outside_the_workspace_are_bound():
    content, _ = bound("bash", "/opt/scripts/deploy.sh")
    assert content == {"/opt/scripts/deploy.sh": digest("/opt/scripts/deploy.sh")}


def test_executables_outside_system_directories_and_their_interpreter_are_bound():
    content, _ = bound("./bin/tool")
    assert content[f"{W}/bin/tool"] == digest(f"{W}/bin/tool")
    assert "/opt/interp/bin/run" in content  # the #! interpreter, not a system file
    assert bound("/usr/bin/git", "status") == ({}, ())


def test_node_and_ruby_preloads():
    content, unbound = bound("node", "-r", "./pre.js", "x.js")
    assert content[f"{W}/pre.js"] == digest(f"{W}/pre.js")
    assert f"{W}/x.js" in content and not unbound
    _, unbound = bound("node", "--require", "ts-node/register", "x.js")
    assert unbound == (c.NODE_MODULE,)
    _, unbound = bound("ruby", "-rjson", "x.rb")
    assert unbound == (c.RUBY_LIBRARY,)
    _, unbound = bound("perl", "-MFoo", "x.pl")
    assert unbound == (c.PERL_MODULE,)


def test_sourcing_is_followed_one_level_and_the_rest_is_reported():
    files = {
        **FILES,
        BUILD: '#!/bin/sh\n. ./lib.sh\nsource "$(dirname "$0")/env.sh"\n',
        f"{W}/lib.sh": "source ./deeper.sh\n",
    }
    content, unbound = bound("bash", "build.sh", files=files)
    assert f"{W}/lib.sh" in content
    assert f"{W}/deeper.sh" not in content
    assert set(unbound) == {c.SOURCE_DYNAMIC, c.SOURCE_NESTED}


@pytest.mark.parametrize(
    "text",
    ["echo $(./build.sh)", "./build.sh > out; (cd x && ./y)", "if true; then ./build.sh; fi", "a\nb"],
)
def test_c_text_that_is_not_plain_is_reported_unbound(text):
    _, unbound = bound("sh", "-c", text)
    assert c.NOT_SIMPLE in unbound


def test_leading_comment_lines_leave_the_script_bound_and_a_later_one_does_not():
    """The escalation lines an agent starts a hook's Bash call with (`# agent-console:
    network`) are comments: the script after them is bound as without them."""
    content, unbound = bound("bash", "-c", "# agent-console: network\n\n  # why\\\n./build.sh")
    assert content[BUILD] == digest(BUILD) and not unbound
    for text in ("./build.sh\n# later", "./build.sh # trailing", "# one\n./build.sh\nls"):
        assert c.NOT_SIMPLE in bound("bash", "-c", text)[1], text


def test_output_redirections_do_not_stop_binding():
    content, unbound = bound("bash", "-c", "make 2>&1 | tee build.log && ./build.sh >> out")
    assert content[f"{W}/Makefile"] == digest(f"{W}/Makefile")
    assert content[BUILD] == digest(BUILD)
    assert not unbound
    # A digit apart from `>` is an argument (here: the script), not a descriptor.
    assert f"{W}/2" in bound("sh", "-c", "bash 2 > /dev/null")[0]
    assert c.NOT_SIMPLE in bound("sh", "-c", "bash < build.sh")[1]


def test_an_expansion_naming_the_script_is_reported_unbound():
    assert c.DYNAMIC_WORD in bound("sh", "-c", "bash $SCRIPT")[1]
    assert c.DYNAMIC_WORD in bound("sh", "-c", "$TOOL --flag")[1]
    # An expansion in an argument of an ordinary program binds nothing and costs nothing.
    assert bound("sh", "-c", "ls $HOME | grep x") == ({}, ())


def test_a_path_set_in_the_arguments_is_reported_unbound():
    assert bound("env", "PATH=/tmp/evil", "tool")[1] == (c.PATH_OVERRIDE,)


def test_cd_in_c_text_moves_where_scripts_are_found():
    content, _ = bound("sh", "-c", "cd sub && ./run.sh")
    assert f"{W}/sub/run.sh" in content


def test_unreadable_script_is_a_problem_naming_the_argument():
    class Unreadable(FakeHost):
        def file_sha256(self, path: str) -> str | None:
            return None if path == BUILD else super().file_sha256(path)

    with pytest.raises(InvalidInput) as exc:
        parse(
            {"kind": "process", "executable": "bash", "args": ["-x", "build.sh"], "workspace_root": W},
            Unreadable(FILES),
        )
    assert exc.value.problem.field == "args[1]"
    assert exc.value.problem.reason == "content_unreadable"


def test_reasons_are_fixed_text():
    # Nothing the agent wrote reaches a reason: they are the module's constants.
    _, unbound = bound("python3", "-m", "évil\x1b[31m")
    assert unbound == (c.PYTHON_MODULE,)


def test_a_standing_grant_does_not_apply_to_an_operation_with_unbound_content():
    from console.policy import Effect, Grant, GrantScope, evaluate
    from console.policy.config import policy_from_toml

    op = parse(
        {"kind": "process", "executable": "python3", "args": ["-m", "pytest"], "workspace_root": W},
        FakeHost(FILES),
    )
    assert op.unbound
    config = policy_from_toml('approval = "untrusted"\nworkspaces = ["/home/dev"]\n')
    always = Grant("g-1", op.fingerprint, GrantScope.ALWAYS, Effect.ALLOW)
    assert evaluate(op, config, [always]).grant is None
    once = Grant("g-2", op.fingerprint, GrantScope.ONCE, Effect.ALLOW)
    decision = evaluate(op, config, [always, once])
    assert decision.grant is once and decision.verdict.value == "allow"


class _Asked(FakeHost):
    """The fake host, remembering each path it is asked to resolve as it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def resolve(self, path: str):
        self.asked.append(path)
        return super().resolve(path)


@given(
    st.text(st.sampled_from("/.a"), max_size=12),
    st.sampled_from(["/", "/w", "/w/src", "/w/.a", "/.."]),
)
@settings(max_examples=500)
def test_a_file_is_asked_for_by_its_normal_path(path, cwd):
    host = _Asked()
    c._Binder(host).file(path, cwd)
    joined = path if path.startswith("/") else f"{cwd.rstrip('/')}/{path}"
    assert host.asked[0] == posixpath.normpath(joined)
