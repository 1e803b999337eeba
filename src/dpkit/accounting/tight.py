"""Tight composition: every analysis that applies to a ledger of events, and the best bound.

:func:`compose` takes what each release is (:mod:`dpkit.accounting.events`) and returns a
:class:`Composition`: the smallest valid epsilon at a given delta over the analyses that
apply, each analysis's own epsilon, a certified lower bound where one is known, and the
converse query ``delta_at(epsilon)``.

The analyses (``by_method`` keys):

``"gaussian"``
    Every event is a (continuous) Gaussian: their composition is exactly ``mu``-Gaussian DP
    with ``mu = sqrt(sum k (Delta/sigma)**2)`` (Dong, Roth and Su 2022), whose ``delta(eps)``
    has a closed form (Balle and Wang 2018). Exact; the PLD analysis is then skipped (it
    composes the same pair and can only be larger).
``"pld"``
    Privacy-loss distributions composed by FFT (Koskela et al. 2020; Doroshenko et al. 2022),
    discretised so the result is an upper bound, every error charged to delta
    (:mod:`dpkit.accounting._pld`). Applies when no event is a bare :class:`~.events.Zcdp`.
``"rdp"``
    Renyi DP with the improved conversion (Balle et al. 2020; Canonne, Kamath and Steinke
    2020).
``"zcdp"``
    zCDP (Bun and Steinke 2016) with the conversion of Canonne, Kamath and Steinke (2020).
``"advanced"``
    Advanced composition (Dwork, Rothblum and Vadhan 2010), when every event has an epsilon
    of its own (no Gaussian or zCDP event).
``"basic"``
    Basic composition (Dwork and Roth 2014, Theorem 3.16).

Every value reported as an epsilon is a valid upper bound at ``delta``: approximations that
can fall below the truth, such as the Gaussian-DP central limit theorem for DP-SGD, are never
offered. Compositions are adaptive: each analysis holds when each release is chosen after
seeing the previous outputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from dpkit._validate import check_delta, check_int, check_nonnegative, describe
from dpkit.accounting import _rdp
from dpkit.accounting._pld import Composed, compose_pld
from dpkit.accounting._rational import round_up
from dpkit.accounting._special import gdp_delta, gdp_epsilon
from dpkit.accounting.events import Event, Gaussian, SubsampledGaussian, collect
from dpkit.errors import ParameterError

__all__ = ["METHODS", "Composition", "compose"]

#: The analyses, in the order that breaks ties (exact first).
METHODS = ("gaussian", "pld", "rdp", "zcdp", "advanced", "basic")

#: Grid points of the PLD analysis over +-10 standard deviations of the composed loss.
PLD_POINTS = 2**16


def _mu_of(event: Event) -> float | None:
    """The GDP parameter of a continuous Gaussian event (a subsampled one at rate 1 too)."""
    if isinstance(event, Gaussian) and not event.discrete:
        return event.mu
    if isinstance(event, SubsampledGaussian) and event.rate == 1.0:
        return event.sensitivity / event.sigma
    return None


def _merged_mu(items: tuple[tuple[Event, int], ...]) -> float:
    """``sqrt(sum k mu**2)`` over Gaussian events, rounded up."""
    total = math.fsum(count * _mu_of(event) * _mu_of(event) for event, count in items)  # type: ignore[operator]
    return round_up(math.sqrt(round_up(total)))


@dataclass(frozen=True)
class _State:
    """What :meth:`Composition.delta_at` needs: the items and each analysis's object."""

    items: tuple[tuple[Event, int], ...]
    mu: float | None = None
    pld: tuple[Composed, Composed] | None = None


@dataclass(frozen=True)
class Composition:
    """The composition of a ledger of events at one ``delta``.

    Attributes
    ----------
    epsilon : float
        The smallest valid epsilon at :attr:`delta` over the analyses in :attr:`by_method`
        (``inf`` if none gives a guarantee, for example when the events' own deltas already
        exceed :attr:`delta`).
    delta : float
        The delta the epsilons are for.
    method : str
        The analysis that gave :attr:`epsilon` (a key of :attr:`by_method`; ``"none"`` for an
        empty ledger).
    by_method : Mapping[str, float]
        Epsilon under each analysis that applies (see :data:`METHODS` and the module
        docstring). Read-only.
    lower : float or None
        A certified lower bound on the epsilon of the composed worst cases of these events:
        the true epsilon of the composition lies in ``[lower, epsilon]``. Given by the exact
        Gaussian composition and by the PLD analysis when every event's worst case is attained
        by its mechanism (not for :class:`~.events.Exponential`, whose dominating pair is an
        envelope); ``None`` otherwise.
    events : tuple of (Event, int)
        The distinct events and their counts, in first-seen order.

    Examples
    --------
    >>> from dpkit.accounting import compose, events as ev
    >>> c = compose([(ev.Laplace(scale=10.0), 100)], delta=1e-5)
    >>> c.method, round(c.epsilon, 3), c.by_method["basic"] > 10
    ('pld', 4.22, True)
    >>> c.lower <= c.epsilon
    True
    """

    epsilon: float
    delta: float
    method: str
    by_method: Mapping[str, float]
    lower: float | None
    events: tuple[tuple[Event, int], ...]
    _state: _State = field(repr=False, compare=False)

    def delta_at(self, epsilon: float) -> float:
        """The smallest valid delta at ``epsilon`` over the analyses of :attr:`by_method`.

        Parameters
        ----------
        epsilon : float
            A finite number >= 0.

        Returns
        -------
        float
            An upper bound on the composition's delta at ``epsilon``, in ``[0, 1]`` (1 when
            no analysis gives a guarantee there).

        Raises
        ------
        TypeError
            ``epsilon`` is not a real number.
        ParameterError
            ``epsilon`` is negative or not finite.

        Examples
        --------
        >>> from dpkit.accounting import compose, events as ev
        >>> c = compose([(ev.Gaussian(sigma=10.0), 100)], delta=1e-5)
        >>> c.delta_at(c.epsilon) <= 1e-5
        True
        """
        eps = check_nonnegative("Composition.delta_at", "epsilon", epsilon)
        return min(self.delta_by_method(eps).values(), default=0.0)

    def delta_by_method(self, epsilon: float) -> dict[str, float]:
        """Delta at ``epsilon`` under each analysis of :attr:`by_method`.

        Parameters
        ----------
        epsilon : float
            A finite number >= 0.

        Returns
        -------
        dict
            ``{method: delta}``, each an upper bound in ``[0, 1]``.

        Raises
        ------
        TypeError
            ``epsilon`` is not a real number.
        ParameterError
            ``epsilon`` is negative or not finite.
        """
        eps = check_nonnegative("Composition.delta_by_method", "epsilon", epsilon)
        state = self._state
        items = state.items
        out: dict[str, float] = {}
        for method in self.by_method:
            if method == "gaussian" and state.mu is not None:
                out[method] = gdp_delta(state.mu, eps)[1]
            elif method == "pld" and state.pld is not None:
                out[method] = max(c.delta_upper(eps) for c in state.pld)
            elif method == "rdp":
                out[method] = _rdp.rdp_delta(items, eps)
            elif method == "zcdp":
                out[method] = _rdp.zcdp_delta(items, eps)
            elif method == "advanced":
                d = _rdp.advanced_delta(items, eps)
                if d is not None:
                    out[method] = d
            elif method == "basic":
                out[method] = _rdp.basic_delta(items, eps)
        return out


def compose(
    events: Iterable[Any],
    *,
    delta: float,
    methods: Iterable[str] | None = None,
    pld_points: int = PLD_POINTS,
) -> Composition:
    """Compose a ledger of events by every analysis that applies; report the tightest.

    Parameters
    ----------
    events : iterable
        Each item an event of :mod:`dpkit.accounting.events`, an object whose ``event``
        attribute is one (a mechanism describing itself), or an ``(item, count)`` pair for
        ``count`` releases of the same kind. Equal events are grouped, so ``k`` equal releases
        cost one self-composition by repeated squaring, not ``k`` convolutions.
    delta : float
        The delta to report epsilon at, ``0 < delta < 1``.
    methods : iterable of str, optional
        Restrict the analyses to these names of :data:`METHODS` (each still only where it
        applies); all by default.
    pld_points : int, default 2**16
        Grid points of the PLD analysis over +-10 standard deviations of the composed loss
        (from 2**8 to 2**22): more points, a tighter bound and a slower one.

    Returns
    -------
    Composition
        ``epsilon`` (the smallest valid bound), ``method``, ``by_method``, ``lower`` and
        :meth:`~Composition.delta_at`.

    Raises
    ------
    TypeError
        ``events`` is not an iterable of events, mechanisms or ``(event, count)`` pairs, or a
        parameter has the wrong type.
    ParameterError
        ``delta`` is not in ``(0, 1)``, a count is negative, a method name is unknown, or
        ``pld_points`` is out of range.

    Privacy
    -------
    Each analysis bounds the adaptive composition of the events under the neighbour relation
    their parameters were computed for; :attr:`Composition.epsilon` is the smallest of these
    valid bounds, so it is one too. The PLD analysis charges its discretisation, truncated
    tails, FFT window and floating-point error to delta; the exact Gaussian one certifies its
    floating-point error; the others round up.

    Notes
    -----
    Costs: Renyi, zCDP, basic and advanced are microseconds to milliseconds; the exact
    Gaussian composition about a millisecond; the PLD one FFT of ``N`` points per distinct
    event (``N`` about ``2 pld_points``), tens of milliseconds.

    Examples
    --------
    >>> from dpkit.accounting import compose, events as ev
    >>> c = compose([(ev.Gaussian(sigma=30.0), 1000)], delta=1e-5)
    >>> c.method, round(c.epsilon, 4)
    ('gaussian', 4.653)
    """
    owner = "compose"
    d = check_delta(owner, delta, allow_zero=False)
    points = check_int(owner, "pld_points", pld_points, minimum=2**8, maximum=2**22)
    wanted = _check_methods(owner, methods)
    items = collect(owner, events)
    if not items:
        return Composition(0.0, d, "none", MappingProxyType({}), 0.0, (), _State(()))
    by: dict[str, float] = {}
    mu = None
    pld = None
    lower: float | None = None
    all_gaussian = all(_mu_of(e) is not None for e, _ in items)
    if all_gaussian and "gaussian" in wanted:
        mu = _merged_mu(items)
        up, low = gdp_epsilon(mu, d)
        by["gaussian"] = float(up)
        lower = float(low)
    if "pld" in wanted and mu is None:
        pld_items = _merge_gaussians(items)
        result = compose_pld(pld_items, d, points)
        if result is not None:
            remove, add, tight = result
            pld = (remove, add)
            by["pld"] = max(remove.epsilon_upper(d), add.epsilon_upper(d))
            if tight and lower is None:
                lower = max(remove.epsilon_lower(d), add.epsilon_lower(d))
    if "rdp" in wanted:
        by["rdp"] = _rdp.rdp_epsilon(items, d)
    if "zcdp" in wanted:
        by["zcdp"] = _rdp.zcdp_epsilon(items, d)
    if "advanced" in wanted:
        adv = _rdp.advanced_epsilon(items, d)
        if adv is not None:
            by["advanced"] = adv
    if "basic" in wanted:
        by["basic"] = _rdp.basic_epsilon(items, d)
    by = {m: by[m] for m in METHODS if m in by}
    if not by:
        raise ParameterError(
            f"{owner}: none of the analyses in `methods`={sorted(wanted)!r} applies to these "
            "events; allow more methods (for example 'rdp' or 'basic')"
        )
    method = min(by, key=lambda m: (by[m], METHODS.index(m)))
    eps = by[method]
    if lower is not None:
        lower = min(lower, eps)
    return Composition(
        epsilon=eps,
        delta=d,
        method=method,
        by_method=MappingProxyType(by),
        lower=lower,
        events=items,
        _state=_State(items, mu, pld),
    )


def _check_methods(owner: str, methods: Iterable[str] | None) -> frozenset[str]:
    if methods is None:
        return frozenset(METHODS)
    if isinstance(methods, str):
        raise TypeError(
            f"{owner}: `methods` must be an iterable of method names, not one string; got "
            f"{methods!r}: pass [{methods!r}]"
        )
    try:
        names = list(methods)
    except TypeError:
        raise TypeError(
            f"{owner}: `methods` must be an iterable of names from {METHODS}; got "
            f"{type(methods).__name__} {describe(methods)}"
        ) from None
    for name in names:
        if not isinstance(name, str) or name not in METHODS:
            raise ParameterError(
                f"{owner}: `methods` must hold names from {METHODS}; got {describe(name)}"
            )
    if not names:
        raise ParameterError(f"{owner}: `methods` is empty; name at least one of {METHODS}")
    return frozenset(names)


def _merge_gaussians(items: tuple[tuple[Event, int], ...]) -> tuple[tuple[Event, int], ...]:
    """Replace the continuous Gaussian events by one with the composed ``mu``: the product
    of Gaussian pairs is exactly a Gaussian pair, so this is no approximation."""
    gauss = tuple((e, k) for e, k in items if _mu_of(e) is not None)
    if not gauss or (len(gauss) == 1 and gauss[0][1] == 1 and isinstance(gauss[0][0], Gaussian)):
        return items
    rest = tuple((e, k) for e, k in items if _mu_of(e) is None)
    # sigma 1 and sensitivity mu: the merged event's mu is exactly the rounded-up value
    return (*rest, (Gaussian(sigma=1.0, sensitivity=_merged_mu(gauss)), 1))
