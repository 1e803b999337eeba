"""Every dpkit mechanism, framework and Session query kind as an audit target, on its
worst-case neighbours.

A *target* is a name (``"laplace"``, ``"ptr"``, ...), its parameters with defaults, and a
builder that turns them into :class:`AuditCase` values: one batched function (calling the
same code as a release, through the ``sample`` methods and ``*_sample`` cores), one
worst-case neighbouring pair (:mod:`dpkit.audit.neighbours`), and the claimed guarantee.
``dpkit audit NAME`` and the test suite run these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit._validate import check_delta, check_int, check_positive
from dpkit.accounting.loss import ZCDP, ApproxDP, PrivacyLoss, PureDP
from dpkit.audit.core import AuditResult, audit
from dpkit.audit.neighbours import NeighbourPair, score_pairs, statistic_pairs
from dpkit.errors import ParameterError

__all__ = ["TARGETS", "AuditCase", "Target", "cases", "run"]


@dataclass(frozen=True)
class AuditCase:
    """One audit to run: a batched function, a neighbouring pair and the claim (a ``ZCDP``
    claim is tested as the ``(epsilon, delta)`` it implies at ``delta``)."""

    name: str
    func: Callable[..., Any]
    pair: NeighbourPair
    claimed: PrivacyLoss
    delta: float = 0.0

    def run(self, **kwargs: Any) -> AuditResult:
        """:func:`dpkit.audit.audit` on this case (keywords: samples, time_budget, rng, ...)."""
        if isinstance(self.claimed, ZCDP):
            kwargs.setdefault("delta", self.delta)
        return audit(
            self.func,
            self.pair.x0,
            self.pair.x1,
            claimed=self.claimed,
            batched=True,
            name=kwargs.pop("name", self.name),
            **kwargs,
        )


@dataclass(frozen=True)
class Target:
    """A named mechanism or framework: its parameters (name -> (type, default, help))."""

    name: str
    summary: str
    params: dict[str, tuple[type, Any, str]]
    build: Callable[[dict[str, Any]], list[AuditCase]] = field(repr=False)


def _mech(name: str, mech: Any) -> Callable[..., Any]:
    return lambda x, size, rng: mech.sample(x, size, rng=rng)


def _pairs_1d(a: float, b: float) -> NeighbourPair:
    return NeighbourPair(a, b, "unbounded", f"value {a:g} vs {b:g} (a sensitivity apart)")


# ----------------------------------------------------------------------------- mechanisms


def _laplace(p: dict[str, Any]) -> list[AuditCase]:
    from dpkit.mechanisms import Laplace

    m = Laplace(epsilon=p["epsilon"], sensitivity=p["sensitivity"])
    pair = _pairs_1d(0.0, p["sensitivity"])
    return [AuditCase("laplace", _mech("laplace", m), pair, m.privacy)]


def _gaussian(p: dict[str, Any]) -> list[AuditCase]:
    from dpkit.mechanisms import Gaussian

    m = Gaussian(p["epsilon"], p["delta"], p["sensitivity"], calibration=p["calibration"])
    pair = _pairs_1d(0.0, p["sensitivity"])
    return [AuditCase(f"gaussian ({p['calibration']})", _mech("gaussian", m), pair, m.privacy)]


def _geometric(p: dict[str, Any]) -> list[AuditCase]:
    from dpkit.mechanisms import Geometric

    m = Geometric(epsilon=p["epsilon"], sensitivity=p["sensitivity"])
    pair = _pairs_1d(0, p["sensitivity"])
    return [AuditCase("geometric", _mech("geometric", m), pair, m.privacy)]


def _discrete_gaussian(p: dict[str, Any]) -> list[AuditCase]:
    from dpkit.mechanisms import DiscreteGaussian

    m = DiscreteGaussian(p["epsilon"], p["delta"], p["sensitivity"])
    pair = _pairs_1d(0, p["sensitivity"])
    return [AuditCase("discrete gaussian", _mech("discrete_gaussian", m), pair, m.privacy)]


def _selection(kind: str) -> Callable[[dict[str, Any]], list[AuditCase]]:
    def build(p: dict[str, Any]) -> list[AuditCase]:
        from dpkit.mechanisms import Exponential, PermuteAndFlip, ReportNoisyMax

        cls = {
            "exponential": Exponential,
            "report_noisy_max": ReportNoisyMax,
            "permute_and_flip": PermuteAndFlip,
        }[kind]
        m = cls(epsilon=p["epsilon"], sensitivity=p["sensitivity"])
        cands = list(range(p["candidates"]))

        def func(scores: Any, size: int, rng: Any) -> np.ndarray:
            return np.asarray(m.sample(cands, scores, size, rng=rng))

        return [
            AuditCase(f"{kind.replace('_', '-')} [{pair.description}]", func, pair, m.privacy)
            for pair in score_pairs(p["candidates"], p["sensitivity"])
        ]

    return build


# ----------------------------------------------------------------------------- frameworks


def _bounds(p: dict[str, Any]) -> tuple[float, float]:
    return (float(p["lower"]), float(p["upper"]))


def _data_pairs(p: dict[str, Any], statistic: str, relation: str) -> list[NeighbourPair]:
    return statistic_pairs(statistic, _bounds(p), p["n"], relation=relation)


def _ptr(p: dict[str, Any]) -> list[AuditCase]:
    from dpkit.frameworks.ptr import propose_test_release_sample

    kw = {"epsilon": p["epsilon"], "delta": p["delta"], "bounds": _bounds(p)}
    b = p["proposed_bound"]

    def func(x: Any, size: int, rng: Any) -> np.ndarray:
        return propose_test_release_sample(x, p["query"], b, size=size, rng=rng, **kw)

    claim = ApproxDP(p["epsilon"], p["delta"])
    pairs = [*_ptr_pairs(p), *_data_pairs(p, p["query"], "unbounded")]
    return [
        AuditCase(f"ptr {p['query']} [{pair.description}]", func, pair, claim) for pair in pairs
    ]


def _ptr_pairs(p: dict[str, Any]) -> list[NeighbourPair]:
    """PTR's own worst cases: the test at its threshold, and the release once it passes.

    All records equal put the distance to high sensitivity at about ``n - 1`` (median): with
    ``n`` near the threshold the test passes about half the time, and removing a record
    moves the distance by one. Two clusters ``proposed_bound`` apart, far above the
    threshold, pass always and the added record moves the median by half the bound.
    """
    from dpkit.frameworks.ptr import threshold_plan

    lo, hi = _bounds(p)
    owner = "propose_test_release"  # the framework's own checks, then its threshold
    eps = check_positive(owner, "epsilon", p["epsilon"])
    dlt = check_delta(owner, p["delta"], allow_zero=False)
    _g, t, _cap = threshold_plan(eps / 2, dlt)  # the test gets half of epsilon
    mid = (lo + hi) / 2
    n = int(np.ceil(t)) + 1
    at = np.full(n, mid)
    m = 4 * n
    b = p["proposed_bound"]
    two = np.concatenate([np.full(m + 1, mid), np.full(m, min(mid + b, hi))])
    return [
        NeighbourPair(at, at[1:], "unbounded", f"{n} x {mid:g} (test at threshold), remove one"),
        NeighbourPair(
            two,
            np.append(two, min(mid + b, hi)),
            "unbounded",
            f"{m + 1} x {mid:g}, {m} x {mid + b:g}, add {mid + b:g}",
        ),
    ]


def _smooth(p: dict[str, Any]) -> list[AuditCase]:
    from dpkit.frameworks.smooth import smooth_sensitivity_sample

    noise = p["noise"]
    delta = p["delta"] if noise == "laplace" else 0.0
    kw = {"epsilon": p["epsilon"], "delta": delta, "bounds": _bounds(p), "noise": noise}

    def func(x: Any, size: int, rng: Any) -> np.ndarray:
        return smooth_sensitivity_sample(x, p["query"], size=size, rng=rng, **kw)

    claim: PrivacyLoss = ApproxDP(p["epsilon"], delta) if delta else PureDP(p["epsilon"])
    return [
        AuditCase(f"smooth {noise} {p['query']} [{pair.description}]", func, pair, claim)
        for pair in _data_pairs(p, p["query"], "unbounded")
    ]


def _saa(p: dict[str, Any]) -> list[AuditCase]:
    from dpkit.frameworks.sample_aggregate import sample_and_aggregate_sample

    kw = {
        "chunks": p["chunks"],
        "output_bounds": _bounds(p),
        "epsilon": p["epsilon"],
        "aggregator": p["aggregator"],
    }

    def func(x: Any, size: int, rng: Any) -> np.ndarray:
        return sample_and_aggregate_sample(x, "mean", size=size, rng=rng, **kw)

    claim = PureDP(p["epsilon"])
    return [  # replace-one neighbours: the framework's relation
        AuditCase(f"sample-and-aggregate {p['aggregator']} [{pair.description}]", func, pair, claim)
        for pair in _data_pairs(p, "mean", "bounded")
    ]


def _inverse(p: dict[str, Any]) -> list[AuditCase]:
    from dpkit.frameworks.inverse import inverse_sensitivity_sample

    query = p["query"]
    pct = p["percentile"] if query == "percentile" else None

    def func(x: Any, size: int, rng: Any) -> np.ndarray:
        return inverse_sensitivity_sample(
            x,
            epsilon=p["epsilon"],
            bounds=_bounds(p),
            query=query,
            percentile=pct,
            size=size,
            rng=rng,
        )[0]

    stat = "mean" if query == "mean" else ("median" if query == "median" else "percentile")
    relations = ("bounded",) if query == "mean" else ("unbounded", "bounded")
    pairs = [
        pair
        for rel in relations
        for pair in statistic_pairs(
            stat, _bounds(p), p["n"], relation=rel, percentile=p["percentile"]
        )
    ]
    return [
        AuditCase(
            f"inverse sensitivity {query} [{pair.description}]", func, pair, PureDP(p["epsilon"])
        )
        for pair in pairs
    ]


def _session(kind: str) -> Callable[[dict[str, Any]], list[AuditCase]]:
    def build(p: dict[str, Any]) -> list[AuditCase]:
        from dpkit.audit.session_query import session_cases

        return [
            AuditCase(name, func, pair, func.claim(pair.x0))
            for name, func, pair in session_cases(kind, p)
        ]

    return build


def _session_zcdp(kind: str) -> Callable[[dict[str, Any]], list[AuditCase]]:
    def build(p: dict[str, Any]) -> list[AuditCase]:
        from dpkit.audit.session_query import zcdp_cases

        return [
            AuditCase(name, func, pair, func.claim(pair.x0), delta)
            for name, func, pair, delta in zcdp_cases(kind, p)
        ]

    return build


#: Largest dataset and candidate list: the worst-case pairs need a few records (PTR's own
#: pairs size themselves), and every draw redoes the framework's work on all of them.
_MAX_SIZE = {"n": 10_000, "candidates": 10_000}

_EPS = (float, 1.0, "claimed epsilon")
_DELTA = (float, 1e-5, "claimed delta")
_SENS = (float, 1.0, "sensitivity")
_ISENS = (int, 1, "integer sensitivity")
_DATA = {
    "lower": (float, 0.0, "lower bound of the data"),
    "upper": (float, 1.0, "upper bound of the data"),
    "n": (int, 8, "records in the worst-case dataset"),
}

_SESSION = {
    "epsilon": _EPS,
    "delta": (float, 1e-5, "delta (group_by's key selection; Gaussian noise)"),
    "noise": (str, "laplace", "laplace or gaussian (gaussian needs delta > 0)"),
    "max_rows": (int, 2, "max_rows_per_unit"),
    "max_groups": (int, 2, "max_groups_per_unit"),
    "salts": (int, 1, "bounding salts in the pool; 1 audits one salt (dpkit.audit.session_query)"),
    "engine": (str, "polars", "polars, pandas or duckdb"),
}
#: Releases under zCDP (``rho``, tested as the (epsilon, delta) it implies at ``delta``) or
#: under (epsilon, delta) with Gaussian noise; a large default delta, where a stage charged
#: by the wrong zCDP rule shows (dpkit.audit.session_query)
_ZCDP = {
    "rho": (float, 0.5, "the release's zCDP budget"),
    "delta": (float, 0.3, "delta at which a zCDP claim is tested; the (epsilon, delta) case's"),
    "epsilon": (float, 1.0, "epsilon of the (epsilon, delta) case"),
    "max_rows": (int, 1, "max_rows_per_unit"),
    "salts": (int, 1, "bounding salts in the pool (dpkit.audit.session_query)"),
    "engine": (str, "polars", "polars, pandas or duckdb"),
}
_GAUSSIAN = {**{k: v for k, v in _SESSION.items() if k != "noise"}, "delta": _DELTA}
_ZCDP_TARGETS = {
    "gaussian": (
        "Session count, sum and mean with Gaussian noise ((epsilon, delta)-DP)",
        _GAUSSIAN,
    ),
    "quantile_cdf": (
        "Session quantiles of an integer column by one noisy histogram, under zCDP and "
        "(epsilon, delta)",
        _ZCDP,
    ),
    "quantile_em": ("Session median and quartiles, exponential mechanisms, under zCDP", _ZCDP),
    "several": (
        "Session count, sum, mean, histogram quantiles and median in one release under zCDP",
        _ZCDP,
    ),
}
_SESSION_TARGETS = {
    "count": "Session count of rows, one person's rows bounded (pure DP)",
    "sum": "Session sum per city, public keys, bounded rows and groups (pure DP)",
    "mean": "Session mean, noisy sum over noisy count (pure DP)",
    "quantile": "Session median, exponential mechanism (pure DP)",
    "group_by": "Session count per city with private keys ((epsilon, delta)-DP)",
}

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "laplace",
            "Laplace mechanism (pure DP)",
            {"epsilon": _EPS, "sensitivity": _SENS},
            _laplace,
        ),
        Target(
            "gaussian",
            "Gaussian mechanism ((epsilon, delta)-DP)",
            {
                "epsilon": _EPS,
                "delta": _DELTA,
                "sensitivity": _SENS,
                "calibration": (str, "analytic", "analytic or classic (epsilon < 1)"),
            },
            _gaussian,
        ),
        Target(
            "geometric",
            "geometric / discrete Laplace mechanism (pure DP)",
            {"epsilon": _EPS, "sensitivity": _ISENS},
            _geometric,
        ),
        Target(
            "discrete_gaussian",
            "discrete Gaussian mechanism ((epsilon, delta)-DP)",
            {"epsilon": _EPS, "delta": _DELTA, "sensitivity": _ISENS},
            _discrete_gaussian,
        ),
        Target(
            "exponential",
            "exponential mechanism (pure DP)",
            {"epsilon": _EPS, "sensitivity": _SENS, "candidates": (int, 3, "candidates")},
            _selection("exponential"),
        ),
        Target(
            "report_noisy_max",
            "report-noisy-max, Laplace noise (pure DP)",
            {"epsilon": _EPS, "sensitivity": _SENS, "candidates": (int, 3, "candidates")},
            _selection("report_noisy_max"),
        ),
        Target(
            "permute_and_flip",
            "permute-and-flip (pure DP)",
            {"epsilon": _EPS, "sensitivity": _SENS, "candidates": (int, 3, "candidates")},
            _selection("permute_and_flip"),
        ),
        Target(
            "ptr",
            "propose-test-release ((epsilon, delta)-DP, add/remove)",
            {
                "epsilon": _EPS,
                "delta": _DELTA,
                "query": (str, "median", "median or mean"),
                "proposed_bound": (float, 0.05, "proposed local-sensitivity bound"),
                **_DATA,
            },
            _ptr,
        ),
        Target(
            "smooth",
            "smooth-sensitivity release (laplace: (epsilon, delta); cauchy, student_t: pure)",
            {
                "epsilon": _EPS,
                "delta": _DELTA,
                "query": (str, "median", "median or mean"),
                "noise": (str, "laplace", "laplace, cauchy or student_t"),
                **_DATA,
            },
            _smooth,
        ),
        Target(
            "sample_and_aggregate",
            "sample-and-aggregate of chunk means (pure DP, replace-one)",
            {
                "epsilon": _EPS,
                "chunks": (int, 4, "parts"),
                "aggregator": (str, "mean", "mean or median"),
                **_DATA,
            },
            _saa,
        ),
        Target(
            "inverse_sensitivity",
            "inverse-sensitivity mechanism (pure DP)",
            {
                "epsilon": _EPS,
                "query": (str, "median", "median, percentile or mean"),
                "percentile": (float, 50.0, "for query=percentile"),
                **_DATA,
            },
            _inverse,
        ),
        *(
            Target(f"session_{kind}", summary, _SESSION, _session(kind))
            for kind, summary in _SESSION_TARGETS.items()
        ),
        *(
            Target(f"session_{kind}", summary, params, _session_zcdp(kind))
            for kind, (summary, params) in _ZCDP_TARGETS.items()
        ),
    )
}


def cases(name: str, **params: Any) -> list[AuditCase]:
    """The audit cases of target ``name`` with ``params`` overriding its defaults.

    Examples
    --------
    >>> [c.name for c in cases("laplace", epsilon=0.5)]
    ['laplace']
    """
    if name not in TARGETS:
        raise ParameterError(f"audit: unknown target {name!r}; choose from {sorted(TARGETS)}")
    t = TARGETS[name]
    unknown = set(params) - set(t.params)
    if unknown:
        raise ParameterError(
            f"audit {name}: unknown parameter(s) {sorted(unknown)}; allowed: {sorted(t.params)}"
        )
    values = {k: params.get(k, default) for k, (_typ, default, _h) in t.params.items()}
    for key, top in _MAX_SIZE.items():
        if key in values:
            check_int(f"audit {name}", key, values[key], minimum=2, maximum=top)
    return t.build(values)


def run(name: str, *, params: dict[str, Any] | None = None, **kwargs: Any) -> list[AuditResult]:
    """Audit every case of a target (keywords go to :func:`dpkit.audit.audit`)."""
    return [case.run(**kwargs) for case in cases(name, **(params or {}))]
