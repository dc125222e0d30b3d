"""The vectors published in docs/fingerprint.md are what the code computes."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from support.fakehost import FakeHost
from support.paths import REPO

from console.contract.fingerprint import canonical_bytes
from console.contract.operation import parse

DOC = REPO / "docs" / "fingerprint.md"


def _vectors() -> list[tuple[str, dict, dict, str, str]]:
    text = DOC.read_text(encoding="utf-8")
    sections = re.split(r"^### Vector \d+: ", text, flags=re.M)[1:]
    out = []
    for section in sections:
        title = section.splitlines()[0]
        op = json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))
        files_m = re.search(r"```files\n(.*?)\n```", section, re.S)
        files = json.loads(files_m.group(1)) if files_m else {}
        canonical = re.search(r"```canonical\n(.*?)\n```", section, re.S).group(1)
        hexdigest = re.search(r"Fingerprint: `([0-9a-f]{64})`", section).group(1)
        out.append((title, op, files, canonical, hexdigest))
    return out


VECTORS = _vectors()


def test_the_spec_publishes_at_least_eight_vectors():
    assert len(VECTORS) >= 8


@pytest.mark.parametrize(
    ("title", "op", "files", "canonical", "hexdigest"), VECTORS, ids=[v[0] for v in VECTORS]
)
def test_vector(title, op, files, canonical, hexdigest):
    operation = parse(op, FakeHost(files))
    assert canonical_bytes(operation).decode("utf-8") == canonical
    assert hashlib.sha256(canonical.encode("utf-8")).hexdigest() == hexdigest
    assert operation.fingerprint == hexdigest
