"""Two different values must never share a canonical form (finding 11).

A canonical form is what grants and the history's hash chain are keyed by; if NaN were
written as ``null`` (as before) or 2**53 + 1 as 2**53, a value could stand in for another
one that was approved or recorded.
"""

from __future__ import annotations

import math

import pytest

from console.contract.strictjson import StrictJSONError, canonical


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_or_infinity_cannot_pass_for_null(value):
    with pytest.raises(StrictJSONError) as err:
        canonical({"scope": value})
    assert err.value.code == "non_finite_number"
    assert canonical({"scope": None}) == b'{"scope":null}'


def test_an_integer_a_reader_would_round_cannot_pass_for_its_neighbour():
    assert canonical(2**53 - 1) == b"9007199254740991"
    for value in (2**53, 2**53 + 1):
        with pytest.raises(StrictJSONError) as err:
            canonical({"timeout_ms": value})
        assert err.value.code == "unsafe_integer"


def test_names_in_the_private_use_area_cannot_reorder_members_against_other_implementations():
    # Code-point order puts U+E000 first; RFC 8785 (UTF-16 units) puts the emoji first.
    assert canonical({"\ue000": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\ue000":1}'.encode()
