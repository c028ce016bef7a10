"""A group's level eliminated from sparse derivative rows: what both transfer fits rely on."""

from __future__ import annotations

import pytest

from service.core.estimation.group_level import without_group_mean


def test_rows_lose_their_group_mean_and_keep_their_differences() -> None:
    rows = [{0: 1.0, 2: 4.0}, {0: 3.0}, {1: -3.0, 2: 2.0}]
    out = without_group_mean(rows)
    for k in (0, 1, 2):  # every parameter's derivatives now sum to zero over the group
        assert sum(r.get(k, 0.0) for r in out) == pytest.approx(0.0, abs=1e-12)
    # a parameter only one row touches still moves the others (through the group's level)
    assert out[0][1] == pytest.approx(1.0) and out[2][1] == pytest.approx(-2.0)
    # differences between rows are what they were
    assert out[0][0] - out[1][0] == pytest.approx(rows[0][0] - rows[1][0])
    assert rows == [{0: 1.0, 2: 4.0}, {0: 3.0}, {1: -3.0, 2: 2.0}]  # the input is left as it was


def test_a_group_of_one_has_nothing_left() -> None:
    assert without_group_mean([{0: 2.5, 3: -1.0}]) == [{0: 0.0, 3: 0.0}]
