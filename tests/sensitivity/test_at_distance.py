"""A(f, x, k) = max LS_1 over the ball of radius k: exact algorithm against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit import ParameterError
from dpkit import sensitivity as sens
from dpkit._lattice import unit_for

L, U = 0.0, 10.0
QUERIES = ["count", "sum", "mean", "median", "p25", "p90", "p0", "p100"]


def _certified(got: float, exact: float, lower: float, upper: float) -> None:
    """``got`` is a certified upper bound of ``exact``: for data off the lattice of the bounds
    the algorithm works on the lattice points (a per-record map moving each record by at most
    one unit) and adds twice the unit (the statistic is 1-Lipschitz in the sup norm), so it
    exceeds the exact value by at most four units."""
    slack = 4 * unit_for(lower, upper)
    assert exact * (1 - 1e-12) - 1e-300 <= got <= exact * (1 + 1e-12) + slack


def _oracle_universe(x: list[float], k: int) -> np.ndarray:
    # The maximisers of A(f, x, k) for these queries only ever hold data values and the
    # bounds: percentiles are integrals of the interpolant's slopes (linear in each order
    # statistic), the mean's LS_1 terms are convex in each record. A universe holding the data
    # plus k + 2 copies of each bound therefore contains them (k for the ball, one for the
    # LS_1 step, one spare), while every dataset it offers is within the bounds: the brute
    # force over it must then equal the exact value, not merely bound it.
    return np.concatenate([x, [L] * (k + 2), [U] * (k + 2)])


@settings(max_examples=120, deadline=None)
@given(
    x=st.lists(st.integers(0, 10), min_size=1, max_size=5).map(lambda v: [float(i) for i in v]),
    k=st.integers(0, 3),
    relation=st.sampled_from(["bounded", "unbounded"]),
    query=st.sampled_from(QUERIES),
)
def test_matches_brute_force(x: list[float], k: int, relation: str, query: str) -> None:
    exact = sens.local_at_distance(query, x, k, relation=relation, bounds=(L, U))
    brute = sens.empirical_at_distance(query, x, _oracle_universe(x, k), k, relation=relation)
    assert exact == pytest.approx(brute, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
@pytest.mark.parametrize("query", ["mean", "median", "p30"])
def test_no_other_value_does_better(relation: str, query: str) -> None:
    # A grid of interior values added to the universe cannot raise the brute force above the
    # exact value (the grid datasets are inside the bounds ball) and the exact value is still
    # reached: the extremes need only data values and bounds.
    rng = np.random.default_rng(11)
    for _ in range(6):
        x = np.round(rng.uniform(L, U, size=int(rng.integers(2, 5))), 1).tolist()
        k = 1
        uni = np.concatenate([_oracle_universe(x, k), np.linspace(L, U, 7)[1:-1]])
        exact = sens.local_at_distance(query, x, k, relation=relation, bounds=(L, U))
        brute = sens.empirical_at_distance(query, x, uni, k, relation=relation)
        _certified(exact, brute, L, U)


def _nrs07_median(x: np.ndarray, k: int, lower: float, upper: float) -> float:
    # NRS07 section 3.1, odd n, bounded: A(k) = max_{0<=t<=k+1} (x[m+t] - x[m+t-k-1]) with
    # 1-based x[i] = lower for i < 1 and upper for i > n, m = (n + 1) / 2.
    n = x.size
    m = (n + 1) // 2

    def at(i: int) -> float:
        return lower if i < 1 else upper if i > n else float(x[i - 1])

    return max(at(m + t) - at(m + t - k - 1) for t in range(k + 2))


def test_median_equals_nrs07_formula() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(0, 20)) * 2 + 1
        x = np.sort(rng.uniform(0, 50, size=n))
        for k in (0, 1, 2, 5, n):
            got = sens.local_at_distance("median", x, k, relation="bounded", bounds=(0, 50))
            _certified(got, _nrs07_median(x, k, 0, 50), 0, 50)


def test_closed_forms() -> None:
    x = [2.0, 4.0, 9.0]
    assert sens.local_at_distance("count", x, 3, relation="unbounded") == 1.0
    assert sens.local_at_distance("count", x, 3, relation="bounded") == 0.0
    b = (-5.0, 10.0)
    assert sens.local_at_distance("sum", x, 2, relation="unbounded", bounds=b) == 10.0
    assert sens.local_at_distance("sum", x, 0, relation="bounded", bounds=b) == 14.0
    assert sens.local_at_distance("sum", x, 1, relation="bounded", bounds=b) == 15.0
    assert sens.local_at_distance("mean", x, 0, relation="bounded", bounds=b) == 14.0 / 3
    assert sens.local_at_distance("mean", x, 4, relation="bounded", bounds=b) == 5.0


def test_zero_is_local_sensitivity_and_monotone() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 100, size=101)
    for rel in ("bounded", "unbounded"):
        for q in ("mean", "median", "p75"):
            a = [sens.local_at_distance(q, x, k, relation=rel, bounds=(0, 100)) for k in range(8)]
            assert a[0] == pytest.approx(sens.local(q, x, relation=rel, bounds=(0, 100)))
            assert all(b >= c for b, c in zip(a[1:], a[:-1], strict=True))


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [
        ({"query": np.ptp}, ParameterError, "empirical_at_distance"),
        ({"query": "nope"}, ParameterError, "unknown query"),
        ({"k": -1}, ParameterError, "`k` must be an int >= 0"),
        ({"k": 1.5}, TypeError, "`k`"),
        ({"data": []}, ParameterError, "empty"),
        ({"data": [1.0, float("nan")]}, ParameterError, "NaN"),
        ({"bounds": (10, 0)}, ParameterError, "lower < upper"),
        ({"bounds": None}, ParameterError, "`bounds` is required"),
        ({"data": [1.0, 50.0, 60.0]}, ParameterError, "2 value(s) of `data` lie outside"),
        ({"relation": "replace"}, ParameterError, "`relation`"),
    ],
)
def test_bad_input(kwargs: dict, exc: type, words: str) -> None:
    args = {
        "query": "median",
        "data": [1.0, 2.0, 3.0],
        "k": 1,
        "relation": "bounded",
        "bounds": (0, 10),
    }
    args.update(kwargs)
    with pytest.raises(exc, match=None) as info:
        sens.local_at_distance(
            args["query"],
            args["data"],
            args["k"],
            relation=args["relation"],
            bounds=args["bounds"],
        )
    assert words in str(info.value)
    assert "local_at_distance" in str(info.value)


# ----------------------------------------------------------------------------- variance
#
# The variance's maximisers may add records anywhere in [L, U], so a universe of data and
# bounds is not enough for the brute force. The oracle below enumerates the ball with the
# added records drawn from a grid, and takes each member's LS_1 from `local` (itself exact
# against brute force, including the add-at-the-mean step that a universe cannot offer). Its
# value is a lower bound of A(var, x, k); on these cases it reaches it exactly.

_GRID = [float(v) for v in np.linspace(L, U, 21)]


def _var_ball(x: list[float], k: int, relation: str) -> list[list[float]]:
    n = len(x)
    out = []
    for r in range(min(k, n) + 1):
        adds = [r] if relation == "bounded" else range(k - r + 1)
        for removed in itertools.combinations(range(n), r):
            kept = [v for i, v in enumerate(x) if i not in removed]
            for a in adds:
                for extra in itertools.combinations_with_replacement(_GRID, a):
                    if kept or extra:
                        out.append(kept + list(extra))
    return out


def _certified_moment(got: float, oracle: float, kind: str, k: int, width: float) -> None:
    """The variance and the deviation are certified upper bounds: never below the exact value
    (the oracle, itself computed in floats, within 1e-9) and above it by at most the stated
    error (_var_distance.certified_error plus the lattice slack): 1e-6 width**2 for the
    variance and 1e-6 (k + 1) width for the deviation cover both generously here."""
    scale = width * width if kind == "var" else width
    assert got >= oracle - 1e-9 * scale
    assert got <= oracle + 1e-6 * scale * (1 if kind == "var" else k + 1)


def _var_oracle(x: list[float], k: int, relation: str) -> float:
    return max(
        sens.local("var", y, relation=relation, bounds=(L, U)) for y in _var_ball(x, k, relation)
    )


def _var_cases() -> list[tuple[list[float], int, str]]:
    rng = np.random.default_rng(20261122)
    cases = []
    for i in range(70):
        n = int(rng.integers(1, 5))
        if i % 3 == 2:  # two clusters and a middle record: the decrease by removing a datum
            x = rng.choice([0.0, 0.0, 4.0, 5.0, 6.0, 10.0, 10.0], n + 1)
        else:
            x = np.round(rng.uniform(L, U, n), 1)
        k = int(rng.integers(0, 3))
        cases.append((sorted(x.tolist()), k, ("bounded", "unbounded")[i % 2]))
    return cases


@pytest.mark.parametrize(("x", "k", "relation"), _var_cases())
def test_var_matches_brute_force(x: list[float], k: int, relation: str) -> None:
    got = sens.local_at_distance("var", x, k, relation=relation, bounds=(L, U))
    _certified_moment(got, _var_oracle(x, k, relation), "var", k, U - L)


def test_var_cases_need_every_term() -> None:
    # The decrease by removing a data record near the mean of two clusters decides
    # [0, 0, 5, 10, 10] at k = 0: V drops from 25 to 20 when 5 joins {0, 0, 10, 10}.
    x = [0.0, 0.0, 5.0, 10.0, 10.0]
    got = sens.local_at_distance("var", x, 0, relation="unbounded", bounds=(L, U))
    _certified_moment(got, 5.0, "var", 0, U - L)
    # bounded, k = 1: replace the 10 by 0, then the middle 5 by 10: (n-1)/n^2 (z-mu)^2 - ...
    got = sens.local_at_distance("var", x, 1, relation="bounded", bounds=(L, U))
    _certified_moment(got, _var_oracle(x, 1, "bounded"), "var", 1, U - L)


def _subsets_best(w: np.ndarray, r: int, objective) -> float:  # type: ignore[no-untyped-def]
    n = w.size
    best = -np.inf
    for removed in itertools.combinations(range(n), r):
        kept = np.delete(w, list(removed))
        best = max(best, objective(kept))
    return best


def _with_adds(kept: np.ndarray, lo: float, hi: float, a: int) -> list[np.ndarray]:
    return [np.concatenate([kept, [hi] * u, [lo] * (a - u)]) for u in range(a + 1)]


def test_var_block_lemma_against_all_subsets() -> None:
    # Fact 2 of _var_distance: the largest variance after removing r records and adding a at
    # the bounds removes a block, found by bisection; and the decrease term's best block per
    # removed datum z. Both against every subset.
    from dpkit.sensitivity import _var_distance as vd

    rng = np.random.default_rng(4)
    for _ in range(40):
        n = int(rng.integers(3, 9))
        x = np.sort(rng.choice(rng.uniform(L, U, 4), n))
        d = vd.VarData(x, L, U)
        lo, hi = d.lo, d.hi
        for r in range(0, n - 1):
            for a in range(0, 3):
                brute = _subsets_best(
                    d.w,
                    r,
                    lambda kept, a=a, lo=lo, hi=hi: max(
                        np.var(s) for s in _with_adds(kept, lo, hi, a)
                    ),
                )
                assert vd._max_var(d, r, a) == pytest.approx(brute, abs=1e-9)
                m = n - 1 - r + a
                if m < 2:
                    continue
                brute = max(
                    _subsets_best(
                        np.delete(d.w, j),
                        r,
                        lambda kept, a=a, z=d.w[j], lo=lo, hi=hi: max(
                            np.var(s) - np.var(np.append(s, z)) for s in _with_adds(kept, lo, hi, a)
                        ),
                    )
                    for j in range(n)
                )
                assert vd._decrease_data(d, r, a, m) == pytest.approx(brute, abs=1e-9)


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
def test_var_zero_is_local_and_fast_on_a_million(relation: str) -> None:
    rng = np.random.default_rng(12)
    x = np.clip(rng.normal(40, 13, 10**6), 0, 100).round()
    a0 = sens.local_at_distance("var", x, 0, relation=relation, bounds=(0, 100))
    assert a0 == pytest.approx(sens.local("var", x, relation=relation, bounds=(0, 100)))
    a5 = sens.local_at_distance("var", x, 5, relation=relation, bounds=(0, 100))
    assert a0 <= a5 < 1.01 * a0


# ----------------------------------------------------------------------------- std
#
# The deviation's maximisers add records at interior points (roots of a quartic), which no
# grid holds. The oracle enumerates every removal set and number of additions, searches the
# added values on a grid and refines the three best with Nelder-Mead inside the bounds; the
# inner LS_1 comes from `local`. Agreement to 1e-7: a deviation computed from prefix sums
# near a zero variance carries an error of about sqrt(1e-16) = 1e-8.


def _std_oracle(x: list[float], k: int, relation: str) -> float:
    from scipy.optimize import minimize

    def ls(y: list[float]) -> float:
        return sens.local("std", y, relation=relation, bounds=(L, U))

    grid = np.linspace(L, U, 11)
    best = 0.0
    n = len(x)
    for r in range(min(k, n) + 1):
        for removed in itertools.combinations(range(n), r):
            kept = [v for i, v in enumerate(x) if i not in removed]
            for a in [r] if relation == "bounded" else range(k - r + 1):
                if a == 0:
                    best = max(best, ls(kept)) if kept else best
                    continue
                tries = sorted(
                    (
                        (ls(kept + list(w)), w)
                        for w in itertools.combinations_with_replacement(grid, a)
                    ),
                    reverse=True,
                )[:3]
                for val, w in tries:
                    res = minimize(
                        lambda v, kept=kept: -ls(kept + list(np.clip(v, L, U))),
                        np.asarray(w, dtype=float),
                        method="Nelder-Mead",
                        bounds=[(L, U)] * a,
                        options={"xatol": 1e-9, "fatol": 1e-13, "maxiter": 400},
                    )
                    best = max(best, val, -float(res.fun))
    return best


def _std_cases() -> list[tuple[list[float], int, str]]:
    rng = np.random.default_rng(99)
    cases = []
    for i in range(24):
        n = int(rng.integers(2, 5))
        if i % 2:
            x = rng.choice([0.0, 0.0, 4.0, 5.0, 6.5, 10.0, 10.0], n)
        else:
            x = np.round(rng.uniform(L, U, n), 1)
        cases.append(
            (sorted(x.tolist()), int(rng.integers(0, 3)), ("bounded", "unbounded")[i // 2 % 2])
        )
    return cases


@pytest.mark.parametrize(("x", "k", "relation"), _std_cases())
def test_std_matches_brute_force(x: list[float], k: int, relation: str) -> None:
    got = sens.local_at_distance("std", x, k, relation=relation, bounds=(L, U))
    _certified_moment(got, _std_oracle(x, k, relation), "std", k, U - L)


def test_std_decrease_block_lemma_against_all_subsets() -> None:
    # Fact 3 of _std_distance (removing a datum z raises the deviation): the removed block
    # and the added records at the bounds, against every subset.
    from dpkit.sensitivity import _std_distance as sd
    from dpkit.sensitivity import _var_distance as vd

    rng = np.random.default_rng(5)
    for _ in range(30):
        n = int(rng.integers(3, 8))
        x = np.sort(rng.choice(rng.uniform(L, U, 4), n))
        d = vd.VarData(x, L, U)
        lo, hi = d.lo, d.hi
        for r in range(0, n - 1):
            for a in range(0, 3):
                m = n - 1 - r + a
                if m < 2:
                    continue
                brute = max(
                    _subsets_best(
                        np.delete(d.w, j),
                        r,
                        lambda kept, a=a, z=d.w[j], lo=lo, hi=hi: max(
                            np.std(s) - np.std(np.append(s, z)) for s in _with_adds(kept, lo, hi, a)
                        ),
                    )
                    for j in range(n)
                )
                # 1e-7: the square root of a variance near 0 computed from prefix sums
                assert sd._decrease_data(d, r, a, m) == pytest.approx(brute, abs=1e-7)


def test_std_replacing_one_record_has_no_interior_maximum() -> None:
    # The property behind fact 3 (proved in _std_distance): t -> sqrt(V(s' + t)) -
    # sqrt(V(s' + t + z)) falls, then rises, on [L, U], so a removed record between two kept
    # ones, or an added one inside the bounds, can be moved to do no worse. On a fine grid.
    rng = np.random.default_rng(6)
    ts = np.linspace(L, U, 401)
    for _ in range(3000):
        m = int(rng.integers(2, 9))
        rest = L + (U - L) * rng.uniform(0, 1, m - 1) ** rng.uniform(0.3, 3)
        z = rng.uniform(L, U)
        rows = np.column_stack([np.tile(rest, (ts.size, 1)), ts])
        g = np.std(rows, axis=1) - np.std(np.column_stack([rows, np.full(ts.size, z)]), axis=1)
        low = int(np.argmin(g))
        assert np.all(np.diff(g[: low + 1]) <= 1e-12)
        assert np.all(np.diff(g[low:]) >= -1e-12)


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
def test_std_zero_is_local_on_a_million(relation: str) -> None:
    rng = np.random.default_rng(12)
    x = np.clip(rng.normal(40, 13, 10**6), 0, 100).round()
    a0 = sens.local_at_distance("std", x, 0, relation=relation, bounds=(0, 100))
    _certified_moment(a0, sens.local("std", x, relation=relation, bounds=(0, 100)), "std", 0, 100)
    assert sens.local_at_distance("std", x, 5, relation=relation, bounds=(0, 100)) >= a0


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
@pytest.mark.parametrize("query", ["median", "mean", "p25", "var", "std"])
def test_local_at_distance_is_constant_past_the_stable_distance(query: str, relation: str) -> None:
    # A(f, x, k) reaches its supremum by K* = n (replace) or n + 1 (add/remove), the distance
    # at which the scans stop (at_distance.stable_distance); checked one and five steps past
    x = [1.0, 2.0, 7.0, 7.0, 9.5]
    k_star = len(x) + (1 if relation == "unbounded" else 0)
    at = [
        sens.local_at_distance(query, x, k, relation=relation, bounds=(0, 10))
        for k in (k_star, k_star + 1, k_star + 5)
    ]
    assert at[0] == at[1] == at[2]
    big = sens.local_at_distance(query, x, 10**6, relation=relation, bounds=(0, 10))
    assert big == at[0]
