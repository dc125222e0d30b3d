"""Fingerprints/s and policy evaluations/s, beside a bare SHA-256 of the same bytes.

    python benchmarks/fingerprint.py [--n 20000]

Target: canonicalize + fingerprint + evaluate of a typical operation
in <= 50 us median. All three measurements run in the same process, interleaved, so
the ratios hold on a noisy machine.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from console.contract.fingerprint import canonical_bytes
from console.contract.host import OSHost
from console.contract.operation import parse
from console.policy import Grant, GrantScope, PolicyConfig, evaluate


def typical(workspace: str) -> dict:
    return {
        "kind": "process",
        "tool": "claude-code:Bash",
        "executable": "python3",
        "args": ["-m", "pytest", "-q", "tests/test_api.py", "-k", "not slow"],
        "workspace_root": workspace,
        "cwd": "src",
        "env": {"PYTHONHASHSEED": "0", "CI": "1"},
        "workspace_access": "write",
        "network": "none",
        "justification": "Run the API tests after the refactor.",
        "session_id": "agent-1",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    n = ap.parse_args().n

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "src").mkdir()
        data = typical(tmp)
        host = OSHost()
        config = PolicyConfig(workspaces=(tmp,))
        op = parse(data, host)
        grants = [
            Grant(
                id=f"g{i}", fingerprint=hashlib.sha256(str(i).encode()).hexdigest(), scope=GrantScope.ALWAYS
            )
            for i in range(50)
        ]
        raw = canonical_bytes(op)

        bare, fps, evals, full, repeat = [], [], [], [], []
        ns = time.perf_counter_ns
        for i in range(n):
            # Every iteration is a new operation (one more argument): nothing is reused
            # but what the daemon reuses across requests (path resolution, the ceiling).
            t0 = ns()
            hashlib.sha256(raw).hexdigest()
            t1 = ns()
            fresh = replace(op, args=(*op.args, str(i)))
            t2 = ns()
            _ = fresh.fingerprint
            t3 = ns()
            evaluate(fresh, config, grants, 0.0)
            t4 = ns()
            o = parse({**data, "args": [*data["args"], f"x{i}"]}, host)
            evaluate(o, config, grants, 0.0)
            t5 = ns()
            evaluate(op, config, grants, 0.0)  # the same operation asked again
            t6 = ns()
            bare.append(t1 - t0)
            fps.append(t3 - t2)
            evals.append(t4 - t3)
            full.append(t5 - t4)
            repeat.append(t6 - t5)

    def med(xs: list[int]) -> float:
        return statistics.median(xs) / 1000

    def best(xs: list[int]) -> float:
        return min(xs) / 1000

    def p99(xs: list[int]) -> float:
        return sorted(xs)[int(len(xs) * 0.99)] / 1000

    print(
        f"operations: {n} distinct, canonical form {len(raw)} bytes, default policy, a non-matching session grant"
    )
    print(f"{'measure':46} {'median us':>10} {'min us':>8} {'p99 us':>8} {'per second':>11}")
    rows = [
        ("reference: bare sha256 of the canonical bytes", bare),
        ("fingerprint (canonical form + sha256)", fps),
        ("policy evaluation (diff + grants + mode)", evals),
        ("parse + canonicalize + fingerprint + evaluate", full),
        ("evaluate an operation asked again", repeat),
    ]
    for name, xs in rows:
        print(f"{name:46} {med(xs):10.2f} {best(xs):8.2f} {p99(xs):8.2f} {1e6 / med(xs):11,.0f}")
    print(f"fingerprint / bare sha256: {med(fps) / med(bare):.1f}x")
    pure = [a + b for a, b in zip(fps, evals, strict=True)]
    for label, xs in (
        ("canonical form + fingerprint + evaluate", pure),
        ("with parsing and path resolution", full),
    ):
        verdict = "met" if med(xs) <= 50 else "missed"
        print(f"target <= 50 us median, {label}: {med(xs):.1f} us ({verdict})")


if __name__ == "__main__":
    main()
