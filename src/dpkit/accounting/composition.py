"""Composition of privacy losses: sequential, parallel and advanced.

* :func:`sequential_composition` — running several mechanisms on the same data adds their
  losses (Dwork and Roth 2014, Theorem 3.16; Bun and Steinke 2016, Lemma 1.7 for zCDP).
* :func:`parallel_composition` — running mechanisms on disjoint parts of the data costs only
  the largest loss (McSherry 2009, Theorem 4).
* :func:`advanced_composition` — k-fold composition of (epsilon, delta)-DP mechanisms grows
  like sqrt(k) epsilon at the price of an extra delta' (Dwork, Rothblum and Vadhan 2010,
  Theorem III.3).

Sums are computed exactly (floats are rationals) and rounded up once at the end; mixing zCDP
with (epsilon, delta) is refused with a :class:`TypeError` naming the conversion to use.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from dpkit._validate import check_delta, check_int, describe
from dpkit.accounting._rational import ceil_float, finite_up, round_up
from dpkit.accounting.loss import ZCDP, ApproxDP, PrivacyLoss, PureDP
from dpkit.errors import ParameterError

__all__ = ["advanced_composition", "parallel_composition", "sequential_composition"]


def _collect(owner: str, losses: Any) -> list[PrivacyLoss]:
    if isinstance(losses, PureDP | ApproxDP | ZCDP):
        raise TypeError(f"{owner}: `losses` must be an iterable of losses; got one {losses!r}")
    try:
        items = list(losses)
    except TypeError:
        raise TypeError(
            f"{owner}: `losses` must be an iterable of PureDP, ApproxDP or ZCDP values; "
            f"got {type(losses).__name__}"
        ) from None
    if not items:
        raise ParameterError(f"{owner}: `losses` is empty; at least one loss is needed")
    for i, item in enumerate(items):
        if not isinstance(item, PureDP | ApproxDP | ZCDP):
            raise TypeError(
                f"{owner}: `losses[{i}]` must be a PureDP, ApproxDP or ZCDP value; "
                f"got {type(item).__name__} {item!r}"
            )
    zcdp = [isinstance(x, ZCDP) for x in items]
    if any(zcdp) and not all(zcdp):
        raise TypeError(
            f"{owner}: cannot mix ZCDP with (epsilon, delta) losses; convert explicitly first "
            "with pure_to_zcdp (pure -> zCDP) or zcdp_to_approx (zCDP -> (epsilon, delta))"
        )
    return items


def _pair(loss: PureDP | ApproxDP) -> tuple[float, float]:
    return (loss.epsilon, 0.0) if isinstance(loss, PureDP) else (loss.epsilon, loss.delta)


def sequential_composition(losses: Iterable[PrivacyLoss]) -> PrivacyLoss:
    """Sequential (basic) composition: the total loss of running every mechanism.

    Parameters
    ----------
    losses : iterable of PureDP, ApproxDP or ZCDP
        One loss per mechanism run on the same data. PureDP and ApproxDP mix (a PureDP is an
        ApproxDP with ``delta = 0``); ZCDP only composes with ZCDP.

    Returns
    -------
    PureDP, ApproxDP or ZCDP
        ``PureDP(sum eps)`` if all are pure, ``ApproxDP(sum eps, sum delta)`` if any has a delta,
        ``ZCDP(sum rho)`` for zCDP; each sum exact, then rounded up to a float.

    Raises
    ------
    TypeError
        If an element is not a loss, or ZCDP is mixed with (epsilon, delta).
    ParameterError
        If ``losses`` is empty, or the deltas add up to 1 or more.

    Privacy
    -------
    If M_i is (eps_i, delta_i)-DP then (M_1, ..., M_k) is (sum eps_i, sum delta_i)-DP
    (Dwork and Roth 2014, Theorem 3.16, also for adaptively chosen mechanisms). If M_i is
    rho_i-zCDP the composition is (sum rho_i)-zCDP (Bun and Steinke 2016, Lemma 1.7).

    Notes
    -----
    Floats are dyadic rationals, so the sums are computed exactly with
    :class:`fractions.Fraction` and rounded up once: ``sequential_composition([PureDP(0.1)]
    * 10)`` is slightly above 1.0, because the float 0.1 is slightly above 1/10. O(k).

    References
    ----------
    C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014.
    M. Bun and T. Steinke, "Concentrated Differential Privacy: Simplifications, Extensions, and
    Lower Bounds", TCC 2016.

    Examples
    --------
    >>> sequential_composition([PureDP(0.5), PureDP(0.25)])
    PureDP(epsilon=0.75)
    >>> sequential_composition([PureDP(0.5), ApproxDP(0.25, 1e-6)])
    ApproxDP(epsilon=0.75, delta=1e-06)
    >>> sequential_composition([ZCDP(0.125)] * 4)
    ZCDP(rho=0.5)
    >>> sequential_composition([PureDP(0.1)] * 10).epsilon
    1.0000000000000002
    """
    owner = "sequential_composition"
    items = _collect(owner, losses)
    if isinstance(items[0], ZCDP):
        rho = sum((Fraction(x.rho) for x in items), Fraction(0))  # type: ignore[union-attr]
        return ZCDP(finite_up(owner, rho, "the composed rho of `losses`"))
    pairs = [_pair(x) for x in items]  # type: ignore[arg-type]
    eps = finite_up(
        owner, sum((Fraction(e) for e, _ in pairs), Fraction(0)), "the composed epsilon of `losses`"
    )
    if all(isinstance(x, PureDP) for x in items):
        return PureDP(eps)
    delta_exact = sum((Fraction(d) for _, d in pairs), Fraction(0))
    if delta_exact >= 1:
        raise ParameterError(
            f"{owner}: the deltas add up to {float(delta_exact)!r} >= 1, which is no guarantee"
        )
    return ApproxDP(eps, ceil_float(delta_exact))


def parallel_composition(losses: Iterable[PrivacyLoss]) -> PrivacyLoss:
    """Parallel composition over disjoint parts: the loss is the largest single loss.

    Parameters
    ----------
    losses : iterable of PureDP, ApproxDP or ZCDP
        One loss per mechanism, mechanism ``i`` seeing only part ``i`` of a partition of the
        records by a fixed, data-independent rule (for example a public group key).

    Returns
    -------
    PureDP, ApproxDP or ZCDP
        ``PureDP(max eps)``, ``ApproxDP(max eps, max delta)`` or ``ZCDP(max rho)``.

    Raises
    ------
    TypeError
        If an element is not a loss, or ZCDP is mixed with (epsilon, delta).
    ParameterError
        If ``losses`` is empty.

    Privacy
    -------
    Under add/remove-one-record neighbours (``relation="unbounded"``) a change touches exactly
    one part, so the whole is as private as the worst part (McSherry 2009, Theorem 4; the same
    argument gives max delta and max rho). Under replace-one-record neighbours
    (``relation="bounded"``) a replacement can move a record between two parts; then compose
    the two largest losses sequentially instead.

    Notes
    -----
    The partition must not depend on the data beyond each record's own key; a data-dependent
    split (e.g. at the median) breaks the argument. O(k).

    References
    ----------
    F. McSherry, "Privacy Integrated Queries", SIGMOD 2009.

    Examples
    --------
    >>> parallel_composition([PureDP(0.5), PureDP(0.25), PureDP(0.5)])
    PureDP(epsilon=0.5)
    >>> parallel_composition([PureDP(1.0), ApproxDP(0.5, 1e-6)])
    ApproxDP(epsilon=1.0, delta=1e-06)
    """
    items = _collect("parallel_composition", losses)
    if isinstance(items[0], ZCDP):
        return ZCDP(max(x.rho for x in items))  # type: ignore[union-attr]
    pairs = [_pair(x) for x in items]  # type: ignore[arg-type]
    eps = max(e for e, _ in pairs)
    if all(isinstance(x, PureDP) for x in items):
        return PureDP(eps)
    return ApproxDP(eps, max(d for _, d in pairs))


def advanced_composition(loss: PureDP | ApproxDP, k: int, *, delta_prime: float) -> ApproxDP:
    """Advanced composition of k (epsilon, delta)-DP mechanisms.

    Parameters
    ----------
    loss : PureDP or ApproxDP
        The guarantee of each of the k mechanisms (the same for all).
    k : int
        The number of mechanisms, ``k >= 1``; they may be chosen adaptively.
    delta_prime : float
        The extra failure probability paid for the sqrt(k) growth, ``0 < delta_prime < 1``.

    Returns
    -------
    ApproxDP
        ``ApproxDP(epsilon', k * delta + delta_prime)`` with
        ``epsilon' = sqrt(2 k log(1/delta_prime)) epsilon + k epsilon (e^epsilon - 1)``,
        rounded up.

    Raises
    ------
    TypeError
        If ``loss`` is not PureDP/ApproxDP (a ZCDP composes exactly by addition instead) or
        ``k`` is not an int.
    ParameterError
        If ``k < 1``, ``delta_prime`` is not in (0, 1), or the total delta reaches 1.

    Privacy
    -------
    Dwork, Rothblum and Vadhan (2010), Theorem III.3 (Dwork and Roth 2014, Theorem 3.20): for
    every delta' > 0 the k-fold adaptive composition of (epsilon, delta)-DP mechanisms is
    (epsilon', k delta + delta')-DP with epsilon' as above.

    Notes
    -----
    The formula is returned as stated by the theorem, so it can be checked against the
    literature; for small k it exceeds the basic bound k epsilon (for example k = 10,
    epsilon = 0.1), and any caller may use the smaller of the two, since both are valid.
    Computed with ``expm1`` for accuracy at small epsilon. O(1).

    References
    ----------
    C. Dwork, G. N. Rothblum and S. Vadhan, "Boosting and Differential Privacy", FOCS 2010.

    Examples
    --------
    >>> out = advanced_composition(PureDP(0.1), 100, delta_prime=1e-6)
    >>> round(out.epsilon, 6), out.delta
    (6.308231, 1e-06)
    """
    owner = "advanced_composition"
    if not isinstance(loss, PureDP | ApproxDP):
        raise TypeError(
            f"{owner}: `loss` must be a PureDP or ApproxDP value; got {type(loss).__name__} "
            f"{loss!r} (zCDP composes exactly: use sequential_composition)"
        )
    k = check_int(owner, "k", k, minimum=1)
    dp = check_delta(owner, delta_prime, allow_zero=False, name="delta_prime")
    eps, delta = _pair(loss)
    total_delta = Fraction(int(k)) * Fraction(delta) + Fraction(dp)
    if total_delta >= 1:
        shown = f"{float(total_delta)!r}" if total_delta < 2**1000 else "more than 2**1000"
        raise ParameterError(
            f"{owner}: k * delta + delta_prime = {shown} >= 1, which is no "
            "guarantee; lower `k`, `delta` or `delta_prime`"
        )
    try:
        kf = float(k)
        if 1.0 / dp == math.inf:  # a subnormal delta_prime: log(1/delta') as -log(delta')
            eps_out = math.sqrt(2.0 * kf * -math.log(dp)) * eps + kf * eps * math.expm1(eps)
        else:
            eps_out = math.sqrt(2.0 * kf * math.log(1.0 / dp)) * eps + kf * eps * math.expm1(eps)
    except OverflowError:
        eps_out = math.inf
    if not math.isfinite(eps_out):
        raise ParameterError(
            f"{owner}: the composed epsilon overflows a float for `loss.epsilon`={eps!r} and "
            f"`k`={describe(k)}; use sequential_composition (k epsilon), or a smaller k or "
            "epsilon"
        )
    return ApproxDP(round_up(eps_out), ceil_float(total_delta))
