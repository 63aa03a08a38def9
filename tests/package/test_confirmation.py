"""The statistics a tuned speedup is judged by: exact one-sided permutation p-values."""

from __future__ import annotations

import pytest

from servekit.package.confirmation import improvement_pct, permutation_p, verdict


def test_complete_separation_gives_the_smallest_exact_p_value() -> None:
    stock, tuned = [10.0, 10.2, 10.1, 10.3], [8.0, 8.1, 8.2, 7.9]  # latency: tuned lower
    assert permutation_p(stock, tuned, higher_is_better=False) == pytest.approx(1 / 70)
    assert permutation_p(tuned, stock, higher_is_better=True) == pytest.approx(1 / 70)
    assert permutation_p(stock, tuned, higher_is_better=True) == 1.0  # the wrong direction
    assert permutation_p([], tuned, higher_is_better=False) == 1.0


def test_identical_groups_are_not_significant() -> None:
    assert permutation_p([5.0] * 4, [5.0] * 4, higher_is_better=False) == 1.0


def test_improvement_of_the_means() -> None:
    assert improvement_pct([12.0, 12.0], [10.0, 10.0], higher_is_better=False) == pytest.approx(
        20.0
    )
    assert improvement_pct([100.0], [110.0], higher_is_better=True) == pytest.approx(10.0)
    assert improvement_pct([0.0], [1.0], higher_is_better=True) == 0.0


@pytest.mark.parametrize(
    ("stock", "tuned", "claimed", "says"),
    [
        ([10.0, 10.2, 10.1, 10.3], [8.0, 8.1, 8.2, 7.9], True, "better"),
        ([10.0, 10.2, 10.1], [8.0, 8.1, 8.2], False, "at least 4"),
        ([10.0, 8.0, 10.1, 8.1], [8.2, 10.2, 7.9, 10.3], False, "not significant"),
        (
            [10.0, 10.02, 10.01, 10.03],
            [9.9, 9.91, 9.92, 9.89],
            False,
            "below the 2 % improvement contract",
        ),
    ],
)
def test_the_verdict_says_why(
    stock: list[float], tuned: list[float], claimed: bool, says: str
) -> None:
    got, _, _, why = verdict(stock, tuned, higher_is_better=False, contract_pct=2.0)
    assert got is claimed and says in why
