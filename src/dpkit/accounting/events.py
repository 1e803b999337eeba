"""What a release is, for privacy accounting: frozen descriptors of mechanisms.

A release charged only by its ``(epsilon, delta)`` loses what the mechanism is: 100 Laplace
releases at epsilon 0.1 cost 10 by basic composition but 4.22 when their privacy-loss
distributions are composed (at delta 1e-5). These descriptors say what each release is, so
:func:`dpkit.accounting.compose` can compose them by the tightest analysis that applies.

* :class:`Laplace` — Laplace noise of scale ``b`` on a query of L1 sensitivity ``Delta``;
  ``discrete=True`` for the discrete Laplace (geometric) mechanism on the integers.
* :class:`Gaussian` — Gaussian noise of standard deviation ``sigma`` on a query of L2
  sensitivity ``Delta``; ``discrete=True`` for the discrete Gaussian on the integers.
* :class:`Exponential` — the exponential mechanism (and report-noisy-max with Gumbel noise,
  which samples it), an ``epsilon``-bounded-range mechanism.
* :class:`SubsampledGaussian`, :class:`SubsampledLaplace` — the mechanism run on a Poisson
  sample that keeps each record with probability ``rate`` (the DP-SGD step).
* :class:`RandomizedResponse` — ``k``-ary randomized response with parameter ``epsilon``.
* :class:`KeySelection` — the release of keys that pass a noisy threshold, charged by the
  probability ``delta`` that a key held by one person alone is released.
* :class:`Approx` — any other ``(epsilon, delta)``-DP mechanism (``delta=0`` for pure DP: the
  Laplace-noise report-noisy-max, permute-and-flip).
* :class:`Zcdp` — any other ``rho``-zCDP mechanism.

Every descriptor is a small frozen value, validated at construction (errors name the
descriptor, the parameter, what is allowed and what was received), hashable and comparable,
so equal releases group together and compose by repeated squaring.

Neighbours
----------
The descriptors describe one release on neighbouring datasets under the relation its
sensitivity was computed for: add or remove one record (``relation="unbounded"``) or replace
one (``"bounded"``), with the sensitivity of that relation. The subsampled descriptors assume
Poisson sampling and add/remove neighbours, as DP-SGD does. Both orders of a neighbouring
pair are analysed (``x`` holds the extra record, or ``x'`` does); the worse one is charged.

Examples
--------
>>> Laplace(scale=10.0)
Laplace(scale=10.0, sensitivity=1.0, discrete=False)
>>> Laplace(scale=10.0).epsilon
0.1
>>> SubsampledGaussian(sigma=1.1, rate=256 / 60000).rate
0.004266666666666667
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dpkit._validate import (
    check_delta,
    check_int,
    check_nonnegative,
    check_positive,
    describe,
)
from dpkit.errors import ParameterError

__all__ = [
    "Approx",
    "Event",
    "Exponential",
    "Gaussian",
    "KeySelection",
    "Laplace",
    "RandomizedResponse",
    "SubsampledGaussian",
    "SubsampledLaplace",
    "Zcdp",
]


class Event:
    """Base class of the accounting descriptors (see the module docstring)."""

    __slots__ = ()


def _check_bool(owner: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(
            f"{owner}: `{name}` must be True or False; got {type(value).__name__} {describe(value)}"
        )
    return value


def _check_lattice_sensitivity(owner: str, value: Any) -> float:
    out = check_positive(owner, "sensitivity", value)
    if not float(out).is_integer():
        raise ParameterError(
            f"{owner}: with discrete=True, `sensitivity` must be a whole number of lattice "
            f"steps (an integer >= 1); got {describe(value)}"
        )
    return out


def _sensitivity(owner: str, sensitivity: Any, discrete: Any) -> float:
    """A noise event's sensitivity: a whole number of lattice steps for discrete noise
    (``discrete`` checked to be a bool), any finite number > 0 otherwise."""
    if _check_bool(owner, "discrete", discrete):
        return _check_lattice_sensitivity(owner, sensitivity)
    return check_positive(owner, "sensitivity", sensitivity)


def _check_rate(owner: str, value: Any) -> float:
    return check_positive(owner, "rate", value, at_most=1.0)


@dataclass(frozen=True, slots=True)
class Laplace(Event):
    """Laplace noise of scale ``scale`` on a query of L1 sensitivity ``sensitivity``.

    Parameters
    ----------
    scale : float
        The noise scale ``b > 0``: density proportional to ``exp(-|z| / b)``. For
        ``discrete=True``, in lattice steps: ``P[z] ~ exp(-|z| / b)`` on the integers.
    sensitivity : float, default 1
        The L1 sensitivity ``Delta > 0``; for ``discrete=True`` a whole number of steps.
    discrete : bool, default False
        ``True`` for the discrete Laplace (geometric) mechanism on the integer lattice, as
        dpkit's lattice Laplace and ``Geometric`` mechanisms draw it.

    Attributes
    ----------
    epsilon : float
        ``sensitivity / scale``: the mechanism is pure ``epsilon``-DP.

    Raises
    ------
    TypeError
        A parameter is not a real number, or ``discrete`` is not a bool.
    ParameterError
        ``scale`` or ``sensitivity`` is not a finite number > 0, or, with ``discrete=True``,
        ``sensitivity`` is not a whole number.

    Privacy
    -------
    Pure ``Delta / b``-DP (Dwork, McSherry, Nissim and Smith 2006). Its privacy-loss
    distribution is composed exactly: continuous, atoms at ``+-Delta/b`` with a density
    between them; discrete, the ``Delta + 1`` atoms ``(Delta - 2z) / b``, ``z = 0..Delta``.
    The two differ, the discrete one being worse (for ``Delta = 1`` it is randomized
    response with ``epsilon = 1/b``), so one descriptor cannot serve both tightly.

    Examples
    --------
    >>> Laplace(scale=2.0, sensitivity=1.0).epsilon
    0.5
    >>> Laplace(scale=4.0, sensitivity=2, discrete=True)
    Laplace(scale=4.0, sensitivity=2.0, discrete=True)
    """

    scale: float
    sensitivity: float = 1.0
    discrete: bool = False

    def __post_init__(self) -> None:
        owner = "Laplace"
        object.__setattr__(self, "scale", check_positive(owner, "scale", self.scale))
        sens = _sensitivity(owner, self.sensitivity, self.discrete)
        object.__setattr__(self, "sensitivity", sens)
        if not math.isfinite(sens / self.scale):
            raise ParameterError(
                f"{owner}: `sensitivity` / `scale` overflows a float "
                f"({sens!r} / {self.scale!r}); no finite epsilon describes this noise"
            )

    @property
    def epsilon(self) -> float:
        """``sensitivity / scale``, the pure-DP epsilon."""
        return self.sensitivity / self.scale


@dataclass(frozen=True, slots=True)
class Gaussian(Event):
    """Gaussian noise of standard deviation ``sigma`` on a query of L2 sensitivity.

    Parameters
    ----------
    sigma : float
        The noise standard deviation ``sigma > 0`` (for ``discrete=True`` the parameter of
        ``P[z] ~ exp(-z**2 / (2 sigma**2))`` on the integers, in lattice steps).
    sensitivity : float, default 1
        The L2 sensitivity ``Delta > 0``; for ``discrete=True`` a whole number of steps.
    discrete : bool, default False
        ``True`` for the discrete Gaussian (Canonne, Kamath and Steinke 2020).

    Attributes
    ----------
    mu : float
        ``sensitivity / sigma``: the continuous mechanism is ``mu``-Gaussian DP.

    Raises
    ------
    TypeError
        A parameter is not a real number, or ``discrete`` is not a bool.
    ParameterError
        ``sigma`` or ``sensitivity`` is not a finite number > 0, or, with ``discrete=True``,
        ``sensitivity`` is not a whole number.

    Privacy
    -------
    Continuous: ``mu``-GDP with ``mu = Delta / sigma`` (Dong, Roth and Su 2022), exactly
    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle and Wang 2018),
    and ``mu**2 / 2``-zCDP. Discrete: ``(Delta/sigma)**2 / 2``-zCDP (Canonne, Kamath and
    Steinke 2020, Theorem 4); its privacy loss takes the values ``(Delta**2 - 2 z Delta) /
    (2 sigma**2)`` for integer ``z`` and is composed from them.

    Examples
    --------
    >>> Gaussian(sigma=2.0).mu
    0.5
    """

    sigma: float
    sensitivity: float = 1.0
    discrete: bool = False

    def __post_init__(self) -> None:
        owner = "Gaussian"
        object.__setattr__(self, "sigma", check_positive(owner, "sigma", self.sigma))
        sens = _sensitivity(owner, self.sensitivity, self.discrete)
        object.__setattr__(self, "sensitivity", sens)
        mu = sens / self.sigma
        if not (math.isfinite(mu) and mu > 0):
            raise ParameterError(
                f"{owner}: `sensitivity` / `sigma` = {sens!r} / {self.sigma!r} over- or "
                "underflows a float"
            )

    @property
    def mu(self) -> float:
        """``sensitivity / sigma``, the Gaussian-DP parameter."""
        return self.sensitivity / self.sigma


@dataclass(frozen=True, slots=True)
class Exponential(Event):
    """The exponential mechanism: an ``epsilon``-bounded-range selection.

    Parameters
    ----------
    epsilon : float
        The mechanism's privacy parameter: candidates are sampled with weights
        ``exp(epsilon u / (2 Delta))`` for a utility ``u`` of sensitivity ``Delta``. The same
        event describes report-noisy-max with Gumbel noise (it samples that law).

    Raises
    ------
    TypeError
        ``epsilon`` is not a real number.
    ParameterError
        ``epsilon`` is not a finite number > 0.

    Privacy
    -------
    The mechanism is ``epsilon``-bounded-range (Durfee and Rogers 2019): on neighbours, its
    privacy loss takes values in an interval of width ``epsilon``, ``[t - epsilon, t]`` for
    some ``t`` in ``[0, epsilon]``. It is therefore ``epsilon``-DP and ``epsilon**2 / 8``-zCDP
    (Cesar and Rogers 2021, Lemma 3.2). For one release, the worst case over ``t`` is the
    privacy profile ``delta(e) = (e^(epsilon/2) - e^(e/2))**2 / (e^epsilon - 1)`` for ``e`` in
    ``[0, epsilon]`` (Dong, Durfee and Rogers 2020). dpkit composes the pair of distributions
    whose profile is that upper envelope: its privacy loss has density
    ``e^((epsilon + l)/2) / (2 (e^epsilon - 1))`` on ``[-epsilon, epsilon]``. It dominates
    every bounded-range pair (and is exact for one release), so its composition bounds any
    adaptive composition of exponential mechanisms (Zhu, Dong and Wang 2022, Theorem 10).

    Notes
    -----
    Permute-and-flip and report-noisy-max with exponential or Laplace noise are ``epsilon``-DP
    but not ``epsilon``-bounded-range: with two candidates whose scores move from ``(0, 0)``
    to ``(1, -1)``, permute-and-flip's privacy loss takes the values ``epsilon`` and
    ``-log(2 - e^-epsilon)``, an interval wider than ``epsilon``. Describe them with
    ``Approx(epsilon=epsilon)``.

    Examples
    --------
    >>> Exponential(epsilon=1.0)
    Exponential(epsilon=1.0)
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("Exponential", "epsilon", self.epsilon))


@dataclass(frozen=True, slots=True)
class SubsampledGaussian(Event):
    """The Gaussian mechanism on a Poisson sample: the DP-SGD step.

    Parameters
    ----------
    sigma : float
        The standard deviation of the Gaussian noise, > 0 (in DP-SGD, the noise multiplier
        times the clipping norm).
    rate : float
        The probability ``q`` in ``(0, 1]`` with which each record is kept, independently.
    sensitivity : float, default 1
        The L2 sensitivity of the sum over the sample (the clipping norm).

    Raises
    ------
    TypeError
        A parameter is not a real number.
    ParameterError
        ``sigma`` or ``sensitivity`` is not a finite number > 0, or ``rate`` not in
        ``(0, 1]``.

    Privacy
    -------
    Under add/remove neighbours the pair of output laws is ``(1 - q) N(0, sigma**2) + q
    N(Delta, sigma**2)`` against ``N(0, sigma**2)``, in either order. Its Renyi divergence of
    integer order is the binomial sum of Mironov, Talwar and Zhang (2019), and its
    privacy-loss distribution, in both orders, is composed directly.

    Examples
    --------
    >>> SubsampledGaussian(sigma=1.1, rate=0.01)
    SubsampledGaussian(sigma=1.1, rate=0.01, sensitivity=1.0)
    """

    sigma: float
    rate: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        owner = "SubsampledGaussian"
        object.__setattr__(self, "sigma", check_positive(owner, "sigma", self.sigma))
        object.__setattr__(self, "rate", _check_rate(owner, self.rate))
        object.__setattr__(
            self, "sensitivity", check_positive(owner, "sensitivity", self.sensitivity)
        )
        mu = self.sensitivity / self.sigma
        if not (math.isfinite(mu) and mu > 0):
            raise ParameterError(
                f"{owner}: `sensitivity` / `sigma` = {self.sensitivity!r} / {self.sigma!r} "
                "over- or underflows a float"
            )


@dataclass(frozen=True, slots=True)
class SubsampledLaplace(Event):
    """The Laplace mechanism on a Poisson sample.

    Parameters
    ----------
    scale : float
        The Laplace noise scale ``b > 0``.
    rate : float
        The probability ``q`` in ``(0, 1]`` with which each record is kept.
    sensitivity : float, default 1
        The L1 sensitivity of the query on the sample.

    Raises
    ------
    TypeError
        A parameter is not a real number.
    ParameterError
        ``scale`` or ``sensitivity`` is not a finite number > 0, or ``rate`` not in
        ``(0, 1]``.

    Privacy
    -------
    Pure ``log(1 + q (e^(Delta/b) - 1))``-DP by amplification by subsampling (Balle, Barthe
    and Gaboardi 2018); its privacy-loss distribution (two atoms and a density between, in
    each order of the neighbouring pair) is composed directly.

    Examples
    --------
    >>> round(SubsampledLaplace(scale=1.0, rate=0.1).epsilon, 6)
    0.158565
    """

    scale: float
    rate: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        owner = "SubsampledLaplace"
        object.__setattr__(self, "scale", check_positive(owner, "scale", self.scale))
        object.__setattr__(self, "rate", _check_rate(owner, self.rate))
        object.__setattr__(
            self, "sensitivity", check_positive(owner, "sensitivity", self.sensitivity)
        )
        if not math.isfinite(self.sensitivity / self.scale):
            raise ParameterError(
                f"{owner}: `sensitivity` / `scale` overflows a float "
                f"({self.sensitivity!r} / {self.scale!r})"
            )

    @property
    def epsilon(self) -> float:
        """The amplified pure-DP epsilon ``log(1 + q (e^(Delta/b) - 1))``."""
        return amplified(self.sensitivity / self.scale, self.rate)


@dataclass(frozen=True, slots=True)
class RandomizedResponse(Event):
    """``k``-ary randomized response: the true category with probability ``e^eps / (e^eps +
    k - 1)``, each other one with probability ``1 / (e^eps + k - 1)``.

    Parameters
    ----------
    epsilon : float
        The privacy parameter, a finite number > 0.
    categories : int, default 2
        The number ``k >= 2`` of possible answers.

    Raises
    ------
    TypeError
        ``epsilon`` is not a real number or ``categories`` not an int.
    ParameterError
        ``epsilon`` is not a finite number > 0 or ``categories < 2``.

    Privacy
    -------
    ``epsilon``-DP when one record's value changes. Its privacy loss is ``epsilon`` (answer
    the true value), ``-epsilon`` (answer the neighbour's value) or 0 (any other answer),
    with probabilities ``(e^eps, 1, k - 2) / (e^eps + k - 1)``; binary randomized response
    is the worst case of every ``epsilon``-DP mechanism (Kairouz, Oh and Viswanath 2015).

    Examples
    --------
    >>> RandomizedResponse(epsilon=1.0, categories=4)
    RandomizedResponse(epsilon=1.0, categories=4)
    """

    epsilon: float
    categories: int = 2

    def __post_init__(self) -> None:
        owner = "RandomizedResponse"
        object.__setattr__(self, "epsilon", check_positive(owner, "epsilon", self.epsilon))
        object.__setattr__(
            self, "categories", check_int(owner, "categories", self.categories, minimum=2)
        )


@dataclass(frozen=True, slots=True)
class KeySelection(Event):
    """A release of keys that pass a noisy threshold, charged by its ``delta``.

    Parameters
    ----------
    delta : float
        An upper bound, in ``(0, 1)``, on the probability that a key present in only one of
        two neighbouring datasets is released: for a threshold ``tau`` on a noisy count of a
        key held by one person alone, ``P[count + noise > tau]``, summed over the keys one
        person can hold.

    Raises
    ------
    TypeError
        ``delta`` is not a real number.
    ParameterError
        ``delta`` is not in ``(0, 1)``.

    Privacy
    -------
    The output on keys held by the person alone differs by at most ``delta`` in total
    variation, and is independent of the noise on the other keys; so the release is the
    composition of this ``(0, delta)`` pair with the noise released on the common keys,
    which is described by its own event (for example :class:`Laplace` on the counts).

    Examples
    --------
    >>> KeySelection(delta=1e-7)
    KeySelection(delta=1e-07)
    """

    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta", check_delta("KeySelection", self.delta, allow_zero=False))


@dataclass(frozen=True, slots=True)
class Approx(Event):
    """Any ``(epsilon, delta)``-DP mechanism, described by its guarantee alone.

    Parameters
    ----------
    epsilon : float
        A finite number >= 0.
    delta : float, default 0
        A number in ``[0, 1)``; 0 for a pure ``epsilon``-DP mechanism.

    Raises
    ------
    TypeError
        A parameter is not a real number.
    ParameterError
        ``epsilon`` negative or not finite, or ``delta`` not in ``[0, 1)``.

    Privacy
    -------
    Every ``(epsilon, delta)``-DP mechanism is dominated by the pair of Kairouz, Oh and
    Viswanath (2015): privacy loss ``+infinity`` with probability ``delta``, otherwise
    ``+-epsilon`` with probabilities ``(e^eps, 1) (1 - delta) / (1 + e^eps)``. Composing those
    pairs gives the optimal composition of ``(epsilon, delta)`` guarantees.

    Examples
    --------
    >>> Approx(epsilon=1.0, delta=1e-6)
    Approx(epsilon=1.0, delta=1e-06)
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_nonnegative("Approx", "epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_delta("Approx", self.delta))


@dataclass(frozen=True, slots=True)
class Zcdp(Event):
    """Any ``rho``-zCDP mechanism, described by its guarantee alone.

    Parameters
    ----------
    rho : float
        A finite number >= 0.

    Raises
    ------
    TypeError
        ``rho`` is not a real number.
    ParameterError
        ``rho`` negative or not finite.

    Privacy
    -------
    The Renyi divergence of every order ``alpha > 1`` is at most ``rho alpha`` (Bun and
    Steinke 2016). No single pair of distributions dominates every ``rho``-zCDP mechanism in
    the hockey-stick sense, so a ledger holding one is composed by the Renyi and zCDP
    analyses (and basic composition), not by privacy-loss distributions.

    Examples
    --------
    >>> Zcdp(rho=0.125)
    Zcdp(rho=0.125)
    """

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check_nonnegative("Zcdp", "rho", self.rho))


def amplified(epsilon: float, rate: float) -> float:
    """``log(1 + rate (e^epsilon - 1))`` without overflow: for ``epsilon > 1`` it is written
    ``epsilon + log(rate + (1 - rate) e^-epsilon)``."""
    if epsilon <= 1.0:
        return math.log1p(rate * math.expm1(epsilon))
    return epsilon + math.log(rate + (1.0 - rate) * math.exp(-epsilon))


def collect(owner: str, events: Any) -> tuple[tuple[Event, int], ...]:
    """Normalise ``events`` into distinct ``(event, count)`` pairs, in first-seen order.

    Each item may be an :class:`Event`, an object with an ``event`` attribute holding one
    (a mechanism that describes itself), or an ``(item, count)`` pair with an int
    ``count >= 0``. Equal events are merged, their counts added; zero counts are dropped.
    """
    if isinstance(events, Event) or hasattr(events, "event"):
        raise TypeError(
            f"{owner}: `events` must be an iterable of events; got one {describe(events)}: "
            "wrap it in a list, or pass [(event, count)]"
        )
    if isinstance(events, str | bytes) or not isinstance(events, Iterable):
        raise TypeError(
            f"{owner}: `events` must be an iterable of events or (event, count) pairs; got "
            f"{type(events).__name__} {describe(events)}"
        )
    counts: dict[Event, int] = {}
    for i, item in enumerate(events):
        count = 1
        if isinstance(item, tuple):
            if len(item) != 2:
                raise TypeError(
                    f"{owner}: `events[{i}]` must be an event or an (event, count) pair; got "
                    f"a tuple of length {len(item)}"
                )
            item, count = item
            count = check_int(owner, f"events[{i}] count", count, minimum=0)
        event = _as_event(owner, i, item)
        if count:
            counts[event] = counts.get(event, 0) + count
    return tuple(counts.items())


def _as_event(owner: str, i: int, item: Any) -> Event:
    if isinstance(item, Event):
        return item
    described = getattr(item, "event", None)
    if isinstance(described, Event):
        return described
    raise TypeError(
        f"{owner}: `events[{i}]` must be a dpkit.accounting.events descriptor (Laplace, "
        "Gaussian, Exponential, SubsampledGaussian, SubsampledLaplace, RandomizedResponse, "
        "KeySelection, Approx, Zcdp), an object whose `.event` is one, or an (event, count) "
        f"pair; got {type(item).__name__} {describe(item)}"
    )
