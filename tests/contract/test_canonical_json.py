"""The canonical form is RFC 8785 (JCS): the RFC's own vectors, and Node as the oracle.

RFC 8785 defines numbers and strings by ECMAScript's JSON.stringify and member order by
UTF-16 code units, so Node (``JSON.stringify`` plus ``Array.prototype.sort``, which
compares UTF-16 code units) is an independent reference implementation. The generated
sets are run through one Node process each. Node is required: ``./dev`` installs it.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import struct
import subprocess
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.contract.strictjson import MAX_SAFE_INTEGER, StrictJSONError, _encode, canonical, loads

# RFC 8785 §3.2.2 (input) and §3.2.3 (output), and §3.2.4 (the output's UTF-8 bytes).
RFC_INPUT = r"""{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"""
RFC_OUTPUT = '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
RFC_OUTPUT_HEX = """
7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72
75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a
5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31
65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37
5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30
30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d
"""

# RFC 8785 §3.2.3: the sorting test data, and the order of its values once sorted.
RFC_SORT_INPUT = r"""{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}"""
RFC_SORTED_VALUES = [
    "Carriage Return",
    "One",
    "Control",
    "Latin Small Letter O With Diaeresis",
    "Euro Sign",
    "Emoji: Grinning Face",
    "Hebrew Letter Dalet With Dagesh",
]

# RFC 8785 Appendix B: IEEE-754 bit patterns and their serialization (None: refused).
APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("7fffffffffffffff", None),
    ("7ff0000000000000", None),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]

# The test data of the RFC authors' reference implementations (cyberphone/json-canonicalization).
REFERENCE_DATA = [
    ('[56, {"d": true, "10": null, "1": [ ]}]', '[56,{"1":[],"10":null,"d":true}]'),
    (
        '{"peach": "This sorting order", "p\u00e9ch\u00e9": "is wrong according to French",'
        ' "p\u00eache": "but canonicalization MUST", "sin": "ignore locale"}',
        '{"peach":"This sorting order","péché":"is wrong according to French",'
        '"pêche":"but canonicalization MUST","sin":"ignore locale"}',
    ),
    (
        '{"1": {"f": {"f": "hi","F": 5} ,"\\n": 56.0}, "10": { }, "": "empty", "a": { },'
        ' "111": [ {"e": "yes","E": "no" } ], "A": { }}',
        '{"":"empty","1":{"\\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],"A":{},"a":{}}',
    ),
    ('{"Unnormalized Unicode":"A\\u030a"}', '{"Unnormalized Unicode":"A\u030a"}'),
    (
        r'{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\u000a": "Newline", "1": "One",'
        r' "\u0080": "Control\u007f", "\ud83d\ude02": "Smiley",'
        r' "\u00f6": "Latin Small Letter O With Diaeresis",'
        r' "\ufb33": "Hebrew Letter Dalet With Dagesh", "</script>": "Browser Challenge"}',
        '{"\\n":"Newline","\\r":"Carriage Return","1":"One","</script>":"Browser Challenge",'
        '"\u0080":"Control\u007f","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign",'
        '"\U0001f602":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    ),
]


def _double(hex_bits: str) -> float:
    return float(struct.unpack(">d", bytes.fromhex(hex_bits))[0])


def test_rfc_8785_example_object():
    out = canonical(loads(RFC_INPUT))
    assert out.decode("utf-8") == RFC_OUTPUT
    assert out == bytes.fromhex(RFC_OUTPUT_HEX)


def test_rfc_8785_sorting_example_orders_by_utf16_code_units():
    out = canonical(loads(RFC_SORT_INPUT)).decode("utf-8")
    assert list(json.loads(out).values()) == RFC_SORTED_VALUES


@pytest.mark.parametrize(("bits", "expected"), APPENDIX_B, ids=[b for b, _ in APPENDIX_B])
def test_rfc_8785_appendix_b_numbers(bits, expected):
    value = _double(bits)
    if expected is None:
        with pytest.raises(StrictJSONError) as err:
            canonical(value)
        assert err.value.code == "non_finite_number"
    else:
        assert canonical(value) == expected.encode("ascii")
        assert canonical([value]) == f"[{expected}]".encode("ascii")


@pytest.mark.parametrize(
    ("text", "expected"), REFERENCE_DATA, ids=["arrays", "french", "structures", "unicode", "weird"]
)
def test_reference_implementation_test_data(text, expected):
    assert canonical(loads(text)) == expected.encode("utf-8")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (56.0, "56"),
        (1e30, "1e+30"),
        (1e-7, "1e-7"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
    ],
)
def test_the_numbers_named_in_the_finding(value, expected):
    assert canonical(value) == expected.encode("ascii")


def test_keys_are_ordered_by_utf16_units_not_code_points():
    # U+1F600 is the pair D83D DE00, which sorts before E000 although its code point is higher.
    out = canonical({"\ue000": 1, "\U0001f600": 2, "a": {"\uffff": 3, "\U00010000": 4}})
    assert out.decode("utf-8") == '{"a":{"\U00010000":4,"\uffff":3},"\U0001f600":2,"\ue000":1}'


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused_not_written_as_null(value):
    for doc in (value, [value], {"a": {"b": [1, value]}}):
        with pytest.raises(StrictJSONError) as err:
            canonical(doc)
        assert err.value.code == "non_finite_number"


@pytest.mark.parametrize(
    "value",
    [MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER - 1, 2**64, -(2**70), 10**400],
    ids=["2**53", "-2**53", "2**64", "-2**70", "10**400"],
)
def test_integers_beyond_the_safe_range_are_refused(value):
    for doc in (value, [value], {"timeout_ms": value}):
        with pytest.raises(StrictJSONError) as err:
            canonical(doc)
        assert err.value.code == "unsafe_integer"
        assert "string" in str(err.value)


def test_safe_integers_are_written_as_digits():
    assert canonical([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0, True, False, None]) == (
        b"[9007199254740991,-9007199254740991,0,true,false,null]"
    )


def test_strings_escape_only_what_jcs_escapes():
    text = "".join(map(chr, range(0x20))) + '"\\/\x7f\u2028\u00e9\U0001f600'
    expected = (
        "\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f"
        "\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c"
        '\\u001d\\u001e\\u001f\\"\\\\/\x7f\u2028\u00e9\U0001f600'
    )
    assert canonical(text) == f'"{expected}"'.encode()


@pytest.mark.parametrize("doc", ["\ud800", ["a\udfffb"], {"\udc00": 1}, {"\udc00": 1, "é": 2}])
def test_lone_surrogates_are_refused(doc):
    with pytest.raises(StrictJSONError) as err:
        canonical(doc)
    assert err.value.code == "lone_surrogate"


@pytest.mark.parametrize("doc", [{1: "a"}, {"a": {None: 1}}, {"a": b"bytes"}, {1.5}, object()])
def test_what_is_not_json_is_a_type_error(doc):
    with pytest.raises(TypeError):
        canonical(doc)


def test_tuples_and_enum_values_are_the_json_they_stand_for():
    from enum import IntEnum, StrEnum

    class Colour(StrEnum):
        RED = "red"

    class Level(IntEnum):
        HIGH = 3

    assert canonical({"c": Colour.RED, "l": Level.HIGH, "t": (1, "x")}) == b'{"c":"red","l":3,"t":[1,"x"]}'


def test_nesting_is_bounded():
    deep: list = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(StrictJSONError) as err:
        canonical(deep)
    assert err.value.code == "too_deep"


# -- Node as the oracle -----------------------------------------------------------------

NODE_NUMBERS = """
const lines = require("fs").readFileSync(process.argv[1], "ascii").split("\\n").filter(Boolean);
const out = lines.map((h) => JSON.stringify(Buffer.from(h, "hex").readDoubleBE(0)));
process.stdout.write(out.join("\\n") + "\\n");
"""

NODE_DOCUMENTS = """
function jcs(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
}
const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\\n").filter(Boolean);
process.stdout.write(lines.map((l) => jcs(JSON.parse(l))).join("\\n") + "\\n");
"""


def _node(script: str, data: str, tmp_path: Path) -> list[str]:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.fail(
            "Node.js is the RFC 8785 oracle of these tests and is not installed: run ./dev (apt nodejs)"
        )
    source = tmp_path / "input.txt"
    source.write_text(data, encoding="utf-8")
    run = subprocess.run([node, "-e", script, str(source)], capture_output=True, timeout=300, check=True)
    return run.stdout.decode("utf-8").splitlines()


def _generated_doubles() -> list[float]:
    """Random bit patterns, subnormals, powers of ten and their neighbours, integers near 2**53."""
    rnd = random.Random(8785)
    values: list[float] = []
    while len(values) < 60_000:
        x = _double(f"{rnd.getrandbits(64):016x}")
        if math.isfinite(x):
            values.append(x)
    values += [_double(f"{rnd.getrandbits(52):016x}") for _ in range(10_000)]  # subnormals
    values += [_double(f"{0x8000000000000000 | rnd.getrandbits(52):016x}") for _ in range(2_000)]
    for exp in range(-325, 310):
        x = float(f"1e{exp}")
        for y in (x, -x, 2 * x, 5 * x, x / 3):
            if math.isfinite(y):
                values += [y, math.nextafter(y, 0.0), math.nextafter(y, math.inf)]
    for k in range(-2_000, 2_001):
        values += [float(2**53 + k), float(-(2**53) + k), float(2**53 * 3 + k * 7)]
    values += [rnd.randint(-(10**6), 10**6) / 10 ** rnd.randint(0, 12) for _ in range(15_000)]
    values += [rnd.uniform(-1e-5, 1e-5) for _ in range(5_000)] + [
        rnd.uniform(1e20, 1e22) for _ in range(5_000)
    ]
    return values


@pytest.mark.programs
def test_numbers_match_nodes_json_stringify(tmp_path):
    values = _generated_doubles()
    assert len(values) >= 100_000
    expected = _node(NODE_NUMBERS, "".join(struct.pack(">d", x).hex() + "\n" for x in values), tmp_path)
    assert len(expected) == len(values)
    wrong = [(x, want) for x, want in zip(values, expected, strict=True) if canonical(x).decode() != want]
    assert not wrong, f"{len(wrong)} numbers differ from Node, e.g. {wrong[:5]}"


_KEY_CHARS = st.sampled_from(
    ["a", "B", "1", "\n", "\x7f", "é", "€", "\ue000", "\ufb33", "\uffff", "\U0001f600"]
)
_keys = st.text(_KEY_CHARS | st.characters(blacklist_categories=("Cs",)), max_size=4)
_numbers = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
_scalars = (
    st.none() | st.booleans() | _numbers | st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=25,
)


_NAME_PARTS = [
    "a",
    "B",
    "1",
    "\n",
    "\x7f",
    "é",
    "€",
    "\ue000",
    "\ufb33",
    "\uffff",
    "\U00010000",
    "\U0001f600",
]


def _random_document(rnd: random.Random, depth: int = 0) -> object:
    pick = rnd.randrange(8 if depth < 3 else 5)
    if pick == 0:
        return rnd.choice([None, True, False])
    if pick == 1:
        return rnd.randint(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) // 10 ** rnd.randint(0, 15)
    if pick == 2:
        return rnd.uniform(-1, 1) * 10.0 ** rnd.randint(-30, 30)
    if pick in (3, 4):
        return "".join(
            rnd.choice([*_NAME_PARTS, "\x00", "\x1f", '"', "\\", "/"]) for _ in range(rnd.randint(0, 5))
        )
    if pick == 5:
        return [_random_document(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    names = (
        "".join(rnd.choice(_NAME_PARTS) for _ in range(rnd.randint(0, 3))) for _ in range(rnd.randint(0, 6))
    )
    return {name: _random_document(rnd, depth + 1) for name in names}


@pytest.mark.programs
def test_documents_match_a_node_canonicalizer(tmp_path):
    rnd = random.Random(8785)
    docs = [_random_document(rnd, 2) for _ in range(5_000)]
    lines = "".join(json.dumps(d, ensure_ascii=True) + "\n" for d in docs)
    expected = _node(NODE_DOCUMENTS, lines, tmp_path)
    assert [canonical(d).decode("utf-8") for d in docs] == expected


@given(_documents)
@settings(max_examples=300)
def test_the_msgspec_path_and_the_python_reference_agree_and_read_back(doc):
    out = canonical(doc)
    assert out == _encode(doc, 0).encode("utf-8")
    assert json.loads(out, parse_int=float) == doc  # JCS numbers are doubles


_ascii_named = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.characters(max_codepoint=0x7F), max_size=4), inner, max_size=5)
    ),
    max_leaves=25,
)


@given(_ascii_named)
@settings(max_examples=300)
def test_without_floats_or_non_ascii_names_the_bytes_are_as_before(doc):
    """Why no fingerprint changed: the previous encoder (msgspec, keys by code point)
    differed only on floats, integers beyond 2**53 and non-ASCII member names."""
    assert canonical(doc) == msgspec.json.Encoder(order="sorted").encode(doc)
