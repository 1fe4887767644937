"""``costopt.lp`` imports highspy only when an LP is solved; its ``INF`` must be HiGHS's."""

import highspy

from joiner.scheduling.costopt.lp import INF, solve_lp


def test_inf_is_highs_infinity_and_an_unbounded_row_solves() -> None:
    assert highspy.kHighsInf == INF
    # min x0 + x1 s.t. x0 + x1 >= 1 (upper side unbounded): optimum 1.
    sol = solve_lp([1.0, 1.0], [([0], [1.0]), ([0], [1.0])], [1.0], [INF])
    assert sol.optimal
    assert abs(sol.objective - 1.0) < 1e-9
