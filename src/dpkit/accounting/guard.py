"""The ``accountant=`` keyword every mechanism and framework takes: its one check and its
one spend.

``accountant=None`` means "charge nothing" (the caller accounts for the release some other
way); anything else must be an :class:`~dpkit.accounting.Accountant` or the
:class:`~dpkit.accounting.accountant.LabelledAccountant` view of one. Any other object, even
one with a ``spend`` method, is refused with a :class:`TypeError` naming ``accountant``: a
duck-typed stand-in could silently not enforce the budget, and a wrong object passed by
mistake (a number, a string, a budget value) must not surface as
``'str' object has no attribute 'spend'`` after validation.

:func:`spend` is how every release charges its cost: checked, then spent, before any noise
is drawn. :func:`laplace_event`, :func:`exponential_event` and :func:`approx_event` build
the ``events`` a release states, rounding each parameter the safe way (a Laplace scale down,
an epsilon up: an event never claims less privacy loss than the noise drawn).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from dpkit._validate import describe
from dpkit.accounting.accountant import Accountant, LabelledAccountant
from dpkit.accounting.events import Approx, Event, Exponential, Laplace
from dpkit.accounting.loss import ZCDP, ApproxDP, PrivacyLoss, PureDP
from dpkit.errors import ParameterError

__all__ = ["approx_event", "check_accountant", "exponential_event", "laplace_event", "spend"]


def check_accountant(owner: str, accountant: Any) -> Accountant | LabelledAccountant | None:
    """Return ``accountant`` if it is ``None``, an Accountant or a labelled view of one.

    Raises
    ------
    TypeError
        For anything else, naming ``accountant`` and what was received (with a hint when a
        privacy-loss value was passed where its Accountant was meant).
    """
    if accountant is None or isinstance(accountant, Accountant | LabelledAccountant):
        return accountant
    hint = ""
    if isinstance(accountant, PureDP | ApproxDP | ZCDP):
        hint = f"; to spend from a budget, pass dpkit.Accountant({accountant!r})"
    raise TypeError(
        f"{owner}: `accountant` must be a dpkit.Accountant (or None to charge nothing); got "
        f"{type(accountant).__name__} {describe(accountant)}{hint}"
    )


def spend(
    accountant: Any,
    cost: PrivacyLoss,
    label: str,
    relation: str = "unbounded",
    events: Iterable[Event] | None = None,
) -> None:
    """Charge ``cost``, which holds under ``relation``, to ``accountant`` (if any).

    ``events`` says what the release is, for accounting (:mod:`dpkit.accounting.events`):
    a tight accountant composes them instead of ``cost`` alone. Called by every release
    before any noise is drawn. ``accountant`` must be ``None`` or an
    Accountant (:func:`check_accountant`, with ``label`` as the owner in the message):
    anything else is a TypeError raised before any charge. An overspend raises
    :class:`~dpkit.errors.BudgetExceededError` from :meth:`Accountant.spend` and nothing is
    charged.
    """
    acct = check_accountant(label, accountant)
    if acct is not None:
        acct.spend(cost, label=label, relation=relation, events=events)


def _down(x: Fraction | float | int) -> float:
    """The largest float ``<= x`` (the largest finite float beyond it)."""
    if x >= sys.float_info.max:
        return sys.float_info.max
    f = float(x)
    return f if Fraction(f) <= Fraction(x) else math.nextafter(f, 0.0)


def _up(x: Fraction | float | int) -> float:
    """The smallest float ``>= x``."""
    f = float(x)
    return f if Fraction(f) >= Fraction(x) else math.nextafter(f, math.inf)


def laplace_event(
    scale: Fraction | float | int, sensitivity: Fraction | float | int = 1, discrete: bool = True
) -> Laplace | Approx:
    """A Laplace event for noise of scale ``scale`` on a query of L1 ``sensitivity``.

    ``discrete=True`` (default): the discrete Laplace on the integer lattice, ``scale`` and
    ``sensitivity`` (a whole number) in lattice steps. ``scale`` is rounded down and a
    continuous ``sensitivity`` up to floats, so the event is never less private than the
    noise drawn. A scale so small that ``sensitivity / scale`` overflows a float (an
    epsilon near the largest float) gives ``Approx`` of that epsilon.

    Examples
    --------
    >>> laplace_event(Fraction(10, 3), 1).epsilon
    0.30000000000000004
    """
    sens = int(sensitivity) if discrete else _up(sensitivity)
    try:
        return Laplace(scale=_down(scale), sensitivity=sens, discrete=discrete)
    except ParameterError:  # sensitivity / scale overflows a float: its epsilon alone
        return approx_event(Fraction(sensitivity) / Fraction(scale))


def exponential_event(epsilon: Fraction | float | int) -> Exponential:
    """An exponential mechanism (``epsilon``-bounded range) at ``epsilon`` rounded up to a float.

    Examples
    --------
    >>> exponential_event(Fraction(1, 3))
    Exponential(epsilon=0.33333333333333337)
    """
    return Exponential(epsilon=_up(epsilon))


def approx_event(epsilon: Fraction | float | int, delta: float = 0.0) -> Approx:
    """Any other ``(epsilon, delta)``-DP stage, ``epsilon`` rounded up to a float.

    Examples
    --------
    >>> approx_event(Fraction(1, 3))
    Approx(epsilon=0.33333333333333337, delta=0.0)
    """
    return Approx(epsilon=_up(epsilon), delta=delta)
