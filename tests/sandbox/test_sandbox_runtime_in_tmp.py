"""The console's own code is shown inside a sandbox wherever the checkout lies: one under
/tmp (the sandbox's private scratch) was hidden, so a confined agent's hook could not
start ("cannot run /tmp/…/.venv/bin/python") and the suite failed from such a checkout."""

from __future__ import annotations

import tempfile
from pathlib import Path

from console.sandbox.plan import _open_readonly, _Sources
from console.sandbox.surface import system_surface


def test_the_consoles_runtime_under_tmp_is_bound_and_nothing_else_there(tmp_path):
    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        runtime = Path(scratch) / "checkout" / ".venv"
        runtime.mkdir(parents=True)
        other = Path(scratch) / "someone-elses"
        other.mkdir()
        src = _Sources(str(tmp_path))
        try:
            wanted = [str(runtime), str(other)]
            binds = _open_readonly(src, wanted, system_surface(), [], [], (), (str(runtime),))
        finally:
            src.close()
    assert [b.path for b in binds] == [str(runtime)]
