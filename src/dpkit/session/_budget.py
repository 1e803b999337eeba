"""The budget of one release: validated once, from the analyst's parameters, into a value.

:func:`make_budget` checks ``epsilon``, ``delta``, ``rho`` and ``noise`` and chooses the
noise family; the :class:`Budget` it returns is what the plan (``session/_plan.py``) splits
and re-splits, so no later step validates or converts the analyst's numbers again.
:func:`scaled` gives the part left once an automatic stage took its share, and
:func:`pure_epsilon` / :func:`epsilon_down` a stage's per-record epsilon, rounded down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpkit._validate import check_choice, check_delta, check_positive
from dpkit.accounting import ZCDP, ApproxDP, PrivacyLoss, PureDP, approx_to_zcdp
from dpkit.errors import ParameterError

__all__ = ["Budget", "epsilon_down", "float_up", "make_budget", "pure_epsilon", "scaled"]

_NOISES = ("laplace", "gaussian")


@dataclass(frozen=True, slots=True)
class Budget:
    """How one release spends: the noise family, the totals, and the cost charged.

    ``epsilon`` (Laplace) or ``rho`` (Gaussian, zCDP) is split across the noisy parts;
    ``delta_select`` pays for private key selection, its threshold and its pre-threshold cut
    together (0 with public keys; :func:`selection_threshold`).
    """

    noise: str
    cost: PrivacyLoss
    epsilon: Fraction | None
    rho: Fraction | None
    delta_select: float


def make_budget(
    epsilon: Any, delta: Any, rho: Any, noise: Any, private_keys: bool, owner: str = "release"
) -> Budget:
    """Validate the release's privacy parameters and choose the noise family.

    Pure DP (``delta = 0``) uses Laplace-type noise and needs public keys. ``delta > 0``
    uses Gaussian-type noise under zCDP (converted with :func:`zcdp_to_approx` at ``delta``
    minus what key selection takes, half of ``delta`` with private keys), unless
    ``noise="laplace"``, in which case ``delta`` pays only for key selection. Key
    selection's share covers its threshold and the candidates its pre-threshold drops in
    the engine (:func:`selection_threshold`): the release's delta is the sum of the two
    shares. ``rho`` (a zCDP budget) uses Gaussian noise and cannot pay for private keys.
    """
    if noise is not None:  # a str from the set (an array here is a TypeError, not ambiguous)
        check_choice(owner, "noise", noise, _NOISES)
    if rho is not None:
        if epsilon is not None:
            raise ParameterError(f"{owner}: give `epsilon` (and `delta`) or `rho`, not both")
        r = check_positive(owner, "rho", rho)
        if delta not in (0, 0.0, None):
            raise ParameterError(f"{owner}: `delta` does not apply with `rho` (zCDP)")
        if noise == "laplace":
            raise ParameterError(f"{owner}: noise='laplace' needs `epsilon`, not `rho`")
        if private_keys:
            raise ParameterError(
                f"{owner}: choosing group keys privately needs a delta > 0, which a zCDP "
                "budget (`rho`) cannot record; give public keys with group_by(..., keys=...), "
                "or release under epsilon and delta (an ApproxDP budget)"
            )
        return Budget("gaussian", ZCDP(r), None, Fraction(r), 0.0)
    if epsilon is None:
        raise ParameterError(
            f"{owner}: `epsilon` is required (dpkit never picks a privacy loss for you); "
            "pass epsilon=... (and delta=... for Gaussian noise or private keys), or rho=..."
        )
    eps = check_positive(owner, "epsilon", epsilon)
    d = check_delta(owner, 0.0 if delta is None else delta)
    kind = noise or ("laplace" if d == 0 else "gaussian")
    if d == 0 and kind == "gaussian":
        raise ParameterError(f"{owner}: noise='gaussian' needs delta > 0 (or rho=...)")
    if d == 0 and private_keys:
        raise ParameterError(
            f"{owner}: with delta = 0 (pure DP) the group keys cannot be chosen privately; "
            "either give public keys with group_by(..., keys=[...]) or release with delta > 0 "
            "(for example delta=1e-6) so that keys pass a noisy threshold"
        )
    if kind == "laplace":
        cost: PrivacyLoss = ApproxDP(eps, d) if private_keys else PureDP(eps)
        return Budget("laplace", cost, Fraction(eps), None, d if private_keys else 0.0)
    d_sel = d / 2 if private_keys else 0.0
    if private_keys and d_sel == 0:  # a subnormal delta: half of it rounds to 0
        raise ParameterError(
            f"{owner}: `delta` {d!r} is too small to share with the key threshold (half of it "
            "rounds to 0); raise delta or give public keys"
        )
    rho_total = approx_to_zcdp(eps, d - d_sel).rho
    if rho_total == 0:
        raise ParameterError(
            f"{owner}: `epsilon` {eps!r} is too small for `delta` {d!r}: no positive rho "
            "converts to it"
        )
    return Budget("gaussian", ApproxDP(eps, d), None, Fraction(rho_total), d_sel)


def scaled(budget: Budget, factor: Fraction) -> Budget:
    """``budget`` with ``factor`` of its epsilon or rho (the cost charged is unchanged): what
    the aggregates share once an automatic parameter has taken its part."""
    return Budget(
        budget.noise,
        budget.cost,
        None if budget.epsilon is None else budget.epsilon * factor,
        None if budget.rho is None else budget.rho * factor,
        budget.delta_select,
    )


def float_up(x: Fraction) -> float:
    """The smallest float ``>= x``."""
    out = float(x)
    return math.nextafter(out, math.inf) if Fraction(out) < x else out


def pure_epsilon(budget: Budget, share: Fraction, k: int) -> float:
    """The per-record pure epsilon of a discrete-Laplace stage with ``share`` of the budget,
    rounded down to a float: ``epsilon * share / k`` (Laplace budgets), or
    ``sqrt(2 rho share) / k`` under zCDP (pure epsilon-DP is epsilon**2 / 2-zCDP: Bun and
    Steinke 2016, Proposition 1.4). A unit's ``k`` rows move the histogram by ``k`` in L1
    (group privacy)."""
    return epsilon_down(budget, share, k, 2)


def epsilon_down(budget: Budget, share: Fraction, k: int, per_rho: int) -> float:
    """``epsilon * share / k`` (Laplace budgets) or ``sqrt(per_rho * rho * share) / k`` (zCDP
    budgets, for a mechanism that is epsilon**2 / per_rho-zCDP), rounded down to a float."""
    if budget.noise == "laplace":
        assert budget.epsilon is not None
        exact = budget.epsilon * share / k
    else:
        assert budget.rho is not None
        exact = Fraction(math.sqrt(float(per_rho * budget.rho * share))) / k
        while exact * exact * k * k > per_rho * budget.rho * share:
            exact = Fraction(math.nextafter(float(exact), 0))
    out = float(exact)
    if Fraction(out) > exact:
        out = math.nextafter(out, 0)
    return out
