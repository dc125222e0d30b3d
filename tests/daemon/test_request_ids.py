"""Request ids stay unique across a daemon restart within the same second (a stop and a
start in a script): a reused id met the previous run's decision in the store, which
refuses a second one, and the request never settled."""

from __future__ import annotations

from console.daemon.broker import RequestIds
from console.protocol.ids import REQUEST_ID


def test_two_daemons_started_in_the_same_second_give_different_ids():
    first, second = RequestIds(1_796_000_000.2), RequestIds(1_796_000_000.7)
    a, b = first(), second()
    assert a != b
    assert REQUEST_ID.match(a) and REQUEST_ID.match(b)


def test_ids_of_one_daemon_count_up_and_later_starts_sort_after():
    ids = RequestIds(1_796_000_000.0)
    made = [ids() for _ in range(3)]
    assert [m.rpartition("-")[2] for m in made] == ["1", "2", "3"]
    assert len({m.rpartition("-")[0] for m in made}) == 1
    later = RequestIds(1_796_000_001.0)()
    assert later.split("-")[1][:-2] > made[0].split("-")[1][:-2]  # the start, without the salt
