"""`agent-console exec` exit codes: the console's own ends never pass for the command's.

Real daemon, real bwrap, the real CLI (finding 12): the output limit used to exit 143,
the SIGTERM the executor sent, indistinguishable from a command's own SIGTERM; a missing
executable exited 2 or 127 depending on whether the daemon's parse or the sandbox found
it missing.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.daemon import workspace

from console.cli.exec_commands import EXIT_NOT_FOUND, EXIT_OUTPUT_LIMIT

pytestmark = pytest.mark.needs_bwrap

DAEMON_POLICY = "approval_timeout_s = 20\n"


def exec_(daemon, ws, *argv, extra=()):
    return subprocess.run(
        [sys.executable, "-m", "console", "exec", "--state-dir", str(daemon.state_dir), *extra, "--", *argv],
        cwd=ws,
        capture_output=True,
        timeout=120,
    )


def test_the_codes_are_the_documented_ones():
    assert (EXIT_NOT_FOUND, EXIT_OUTPUT_LIMIT) == (122, 125)
    assert len({EXIT_NOT_FOUND, EXIT_OUTPUT_LIMIT, 124, 126, 127, 143, 2, 3}) == 8


def test_output_limit_exits_125_not_the_sigterm_it_sent(daemon):
    r = exec_(daemon, workspace(), "yes")
    assert r.returncode == EXIT_OUTPUT_LIMIT
    assert b"output limit exceeded" in r.stderr
    assert r.stdout.startswith(b"y\ny\n")


def test_output_limit_record_keeps_what_happened_to_the_process(daemon):
    r = exec_(daemon, workspace(), "yes", extra=("--json",))
    assert r.returncode == EXIT_OUTPUT_LIMIT
    result = json.loads(r.stdout)["result"]
    assert result["status"] == "output_limit"
    assert result["outcome"]["kind"] == "output_limit"
    assert result["signal"] in ("SIGTERM", "SIGKILL")


def test_a_command_that_kills_itself_with_term_still_exits_143(daemon):
    r = exec_(daemon, workspace(), "sh", "-c", "echo before; kill -TERM $$; echo after")
    assert r.returncode == 143
    assert r.stdout == b"before\n"
    assert b"output limit" not in r.stderr


def test_missing_executable_found_by_the_daemons_parse_exits_122(daemon):
    r = exec_(daemon, workspace(), "definitely-not-installed-xyz")
    assert r.returncode == EXIT_NOT_FOUND
    assert b"executable_not_found" in r.stderr


def test_missing_executable_found_by_the_sandbox_exits_122_too(daemon):
    # The script exists (the parse accepts it); its interpreter does not, so the kernel
    # refuses the exec inside the sandbox with ENOENT.
    ws = workspace()
    tool = ws / "tool.sh"
    tool.write_text("#!/nonexistent/interpreter\necho ran\n")
    tool.chmod(0o755)
    r = exec_(daemon, ws, "./tool.sh", extra=("--json",))
    assert r.returncode == EXIT_NOT_FOUND, r.stderr
    result = json.loads(r.stdout)["result"]
    assert result["status"] == "not_started"
    assert result["outcome"]["kind"] == "executable_not_found"

    r = exec_(daemon, ws, "./tool.sh")
    assert r.returncode == EXIT_NOT_FOUND
    assert b"executable_not_found" in r.stderr
    assert b"ran" not in r.stdout
