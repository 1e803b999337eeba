"""Clopper-Pearson bounds against SciPy's beta quantiles (the oracle), and their coverage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta, binom

from dpkit.audit._binomial import betainc, binomial_lower, binomial_upper

CASES = [
    (0, 10),
    (1, 10),
    (5, 10),
    (10, 10),
    (50, 100),
    (3, 10**7),
    (123_456, 10**7),
    (5 * 10**6, 10**7),
    (10, 10**9),
    (10**9 - 5, 10**9),
]


@pytest.mark.parametrize(("k", "n"), CASES)
@pytest.mark.parametrize("conf", [0.9, 0.975, 0.999])
def test_bounds_are_scipys_clopper_pearson_widened_by_at_most_1e_6(k: int, n: int, conf: float):
    lo, hi = binomial_lower(k, n, conf), binomial_upper(k, n, conf)
    exact_lo = beta.ppf(1 - conf, k, n - k + 1) if k > 0 else 0.0
    exact_hi = beta.ppf(conf, k + 1, n - k) if k < n else 1.0
    # never narrower than the exact interval (the audit's bound must stay conservative) ...
    assert lo <= exact_lo and hi >= exact_hi
    # ... and wider only by the documented 1e-7 relative safety margin (plus float error)
    assert exact_lo - lo <= 1e-6 * exact_lo + 1e-300
    assert hi - exact_hi <= 1e-6 * exact_hi


def test_betainc_matches_binomial_tails():
    for n, p, k in [(20, 0.3, 4), (1000, 0.01, 15), (10**6, 0.5, 500_500)]:
        assert betainc(k, n - k + 1, p) == pytest.approx(binom.sf(k - 1, n, p), rel=1e-9)


def test_lower_bound_covers_at_its_level():
    # 1,000 binomial draws at p = 0.02: the 95% lower bound may exceed p at most 5% of the
    # time, so failures are Bin(1000, <= 0.05): above 75 (mean 50, sd 6.9, +3.6 sd) would
    # reject the claimed coverage.
    ks = binom.rvs(2000, 0.02, size=1000, random_state=5)
    fails = sum(binomial_lower(int(k), 2000, 0.95) > 0.02 for k in ks)
    assert fails <= 75
    assert fails >= 25  # and it is not vacuous: an exact bound fails close to 5% of the time


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="confidence"):
        binomial_lower(1, 10, 1.0)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        binomial_upper(11, 10, 0.9)


def test_np_integers_accepted_via_int():
    assert binomial_upper(int(np.int64(0)), 100, 0.95) > 0
