"""The :class:`Accountant`: a privacy budget that cannot be overspent.

Mechanisms and frameworks take ``accountant=`` and call ``accountant.spend(cost, label=...)``
*before* they draw any noise. ``spend`` checks the request against what is left and records
it in one atomic step, or raises :class:`~dpkit.errors.BudgetExceededError` and records
nothing; with ``ledger=`` the record is committed to disk before ``spend`` returns.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpkit._validate import check_delta, check_positive, check_relation
from dpkit.accounting import _rdp
from dpkit.accounting._ledger import (
    COMPOSITIONS,
    Entry,
    MemoryStore,
    Pair,
    Row,
    SQLiteStore,
    default_composition,
    fits,
)
from dpkit.accounting._rational import ceil_float, floor_float
from dpkit.accounting.conversions import zcdp_to_approx
from dpkit.accounting.events import Approx, Event, KeySelection, Zcdp
from dpkit.accounting.loss import ZCDP, ApproxDP, PrivacyLoss, PureDP
from dpkit.accounting.tight import METHODS, Composition, compose
from dpkit.errors import BudgetExceededError, LedgerError, ParameterError

__all__ = ["COMPOSITIONS", "Accountant", "LabelledAccountant", "Spend", "replace_one_cost"]

#: Grid points of a tight accountant's PLD analysis (see :func:`dpkit.accounting.compose`):
#: a few milliseconds per distinct event, within about 1e-3 of the finest grid's epsilon.
ACCOUNTANT_PLD_POINTS = 2**14

#: The analyses tried first when checking a spend: any of them within the budget admits it
#: (each is a valid bound), so the PLD analysis runs only near the budget's edge.
_CHEAP = tuple(m for m in METHODS if m != "pld")

#: A ledger of more distinct events than this is composed without the PLD analysis (one FFT
#: per distinct event: a ledger of hundreds of different releases would take seconds per
#: spend); the others remain valid bounds, less tight.
ACCOUNTANT_PLD_DISTINCT = 32


def compose_as_charged(
    items: tuple[tuple[Event, int], ...], delta: float, methods: Iterable[str] | None = None
) -> Composition:
    """The composition a tight accountant charges: :func:`~dpkit.accounting.compose` at
    :data:`ACCOUNTANT_PLD_POINTS`, without PLD beyond :data:`ACCOUNTANT_PLD_DISTINCT`
    distinct events."""
    if methods is None and len(items) > ACCOUNTANT_PLD_DISTINCT:
        methods = _CHEAP
    return compose(items, delta=delta, pld_points=ACCOUNTANT_PLD_POINTS, methods=methods)


_LOSS_TYPES = (PureDP, ApproxDP, ZCDP)

_RELATION_TEXT = {
    "unbounded": "unbounded (add or remove one record)",
    "bounded": "bounded (replace one record; the number of records is public)",
}


@dataclass(frozen=True, slots=True)
class Spend:
    """One recorded spend.

    Attributes
    ----------
    index
        Position in the ledger, from 1 (in a shared ledger, across all processes).
    label
        What the spend was for, as given to :meth:`Accountant.spend`.
    cost
        The privacy cost as requested (the mechanism's own guarantee).
    charge
        What was taken from the budget, in the budget's type and under the budget's neighbour
        relation (equal to ``cost`` unless a conversion applied), rounded up to floats for
        display; the ledger keeps it exactly.
    timestamp
        When it was recorded (UTC).
    relation
        The neighbour relation ``cost`` holds under, as given to :meth:`Accountant.spend`:
        ``"unbounded"`` (add/remove one record) or ``"bounded"`` (replace one record).
    events
        What the release said it is, for accounting (descriptors of
        :mod:`dpkit.accounting.events`, as given to :meth:`Accountant.spend`); empty when it
        stated none, in which case ``cost`` is all that is known.
    """

    index: int
    label: str
    cost: PrivacyLoss
    charge: PrivacyLoss
    timestamp: datetime
    relation: str = "unbounded"
    events: tuple[Event, ...] = ()


def _check_budget(budget: Any) -> PrivacyLoss:
    if not isinstance(budget, _LOSS_TYPES):
        raise TypeError(
            "Accountant: `budget` must be a PureDP, ApproxDP or ZCDP value, for example "
            f"dpkit.PureDP(1.0); got {type(budget).__name__} {budget!r}"
        )
    main = budget.rho if isinstance(budget, ZCDP) else budget.epsilon
    name = "rho" if isinstance(budget, ZCDP) else "epsilon"
    check_positive("Accountant", f"budget.{name}", main)
    if isinstance(budget, ApproxDP):
        check_delta("Accountant", budget.delta, name="budget.delta")
    return budget


def _check_cost(cost: Any) -> PrivacyLoss:
    """Re-validate a loss: a value forged with ``object.__setattr__`` must not slip through."""
    if not isinstance(cost, _LOSS_TYPES):
        hint = ""
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            hint = f" (wrap a bare epsilon: dpkit.PureDP({cost!r}))"
        raise TypeError(
            "Accountant.spend: `cost` must be a PureDP, ApproxDP or ZCDP value; "
            f"got {type(cost).__name__} {cost!r}{hint}"
        )
    fields = {"rho": cost.rho} if isinstance(cost, ZCDP) else {"epsilon": cost.epsilon}
    if isinstance(cost, ApproxDP):
        fields["delta"] = cost.delta
    for name, value in fields.items():
        ok = isinstance(value, float) and math.isfinite(value) and value >= 0
        if ok and name == "delta":
            ok = value < 1
        if not ok:
            allowed = "in [0, 1)" if name == "delta" else "a finite number >= 0"
            raise ParameterError(
                f"Accountant.spend: `cost.{name}` must be {allowed}; got {value!r}"
            )
    return cost


def replace_one_cost(cost: PrivacyLoss) -> PrivacyLoss:
    """The replace-one guarantee implied by an add/remove guarantee ``cost`` (exact).

    Replacing a record is removing it and adding another: two add/remove steps, so group
    privacy with ``k = 2`` applies (Dwork and Roth 2014, Theorem 2.2 and its (epsilon, delta)
    form; Bun and Steinke 2016, Proposition 1.9 for zCDP):

    - ``PureDP(eps)`` gives ``PureDP(2 eps)``;
    - ``ApproxDP(eps, d)`` gives ``ApproxDP(2 eps, (1 + e^eps) d)``:
      ``P[M(x) in S] <= e^eps (e^eps P[M(z) in S] + d) + d``;
    - ``ZCDP(rho)`` gives ``ZCDP(4 rho)`` (``k**2 rho``).

    Floats are rounded up (``(1 + e^eps) d`` by a relative ``2**-50``), so the result is never
    below the exact value. The reverse does not hold: a replace-one guarantee implies nothing
    under add/remove (a count has replace-one sensitivity 0).

    Examples
    --------
    >>> replace_one_cost(PureDP(0.5))
    PureDP(epsilon=1.0)
    >>> replace_one_cost(ZCDP(0.125))
    ZCDP(rho=0.5)
    """
    if isinstance(cost, ZCDP):
        return ZCDP(ceil_float(4 * Fraction(cost.rho)))
    if isinstance(cost, PureDP):
        return PureDP(ceil_float(2 * Fraction(cost.epsilon)))
    delta = 0.0
    if cost.delta > 0:
        if cost.epsilon > 709.0:  # exp(epsilon) overflows a float
            raise ParameterError(
                f"Accountant.spend: the add/remove guarantee {cost!r} cannot be converted to "
                "replace-one neighbours (group privacy multiplies delta by 1 + e^epsilon, "
                "which overflows for `epsilon` above 709); spend it from an add/remove budget"
            )
        # exp is within one ulp; 2**-50 relative covers it and the products
        grow = Fraction(1) + Fraction(math.exp(cost.epsilon)) * (1 + Fraction(1, 2**50))
        delta = ceil_float(grow * Fraction(cost.delta))
        if delta >= 1:
            raise ParameterError(
                f"Accountant.spend: the add/remove guarantee {cost!r} gives a replace-one delta "
                f"of {delta!r} (group privacy, k = 2), which is no guarantee at all"
            )
    return ApproxDP(ceil_float(2 * Fraction(cost.epsilon)), delta)


def _check_events(events: Any) -> tuple[Event, ...]:
    """``None`` or an iterable of :mod:`dpkit.accounting.events` descriptors, as a tuple."""
    if events is None:
        return ()
    if isinstance(events, Event | str | bytes) or not isinstance(events, Iterable):
        raise TypeError(
            "Accountant.spend: `events` must be None or a list of dpkit.accounting.events "
            f"descriptors; got {type(events).__name__}"
        )
    out = tuple(events)
    for i, event in enumerate(out):
        if not isinstance(event, Event):
            raise TypeError(
                f"Accountant.spend: `events[{i}]` must be a dpkit.accounting.events descriptor "
                f"(Laplace, Gaussian, Approx, Zcdp, ...); got {type(event).__name__}"
            )
    return out


def plain_event(cost: PrivacyLoss) -> Event:
    """What a spend that stated no events is, for accounting: its guarantee alone."""
    if isinstance(cost, ZCDP):
        return Zcdp(rho=cost.rho)
    if isinstance(cost, PureDP):
        return Approx(epsilon=cost.epsilon)
    return Approx(epsilon=cost.epsilon, delta=cost.delta)


def _check_composition(composition: Any) -> str | None:
    if composition is None:
        return None
    if not isinstance(composition, str) or composition not in COMPOSITIONS:
        raise ParameterError(
            f"Accountant: `composition` must be one of {COMPOSITIONS}; got {composition!r}"
        )
    return composition


def _check_label(label: Any) -> str:
    if not isinstance(label, str):
        raise TypeError(
            f"Accountant.spend: `label` must be a str naming the release; got "
            f"{type(label).__name__} {label!r}"
        )
    if not label.strip():
        raise ParameterError("Accountant.spend: `label` must be a non-empty str; got ''")
    return label


class Accountant:
    """A privacy budget that refuses any spend that would exceed it.

    Parameters
    ----------
    budget : PureDP, ApproxDP or ZCDP
        The total privacy loss allowed (epsilon or rho > 0).
    relation : {"unbounded", "bounded"}
        The neighbour relation the budget protects: ``"unbounded"`` (default; add or remove one
        record) or ``"bounded"`` (replace one record, the number of records public). A record
        is a row, or all rows of one person when a privacy unit is set. Stored in the ledger.
    ledger : str or os.PathLike, optional
        A SQLite file keeping every spend durably, shared safely by threads and processes.
        If it does not exist it is created with ``budget`` and ``relation``; if it exists it
        must have been created with exactly this budget and relation. ``None`` (default)
        keeps spends in memory, for this process only.
    zcdp_delta : float, optional
        Only with an :class:`ApproxDP` budget: the delta charged, per zCDP spend, to convert
        it to (epsilon, delta) with :func:`~dpkit.accounting.zcdp_to_approx` (Canonne, Kamath
        and Steinke 2020). ``None`` (default) refuses zCDP spends against such a budget under
        basic composition; tight composition composes them as ``Zcdp(rho)`` events and needs
        no conversion.
    busy_timeout : float, default 60.0
        Seconds a spend waits for other writers of a shared ledger before failing with
        :class:`~dpkit.errors.LedgerError` (which spends nothing).
    composition : {"tight", "basic"}, optional
        How spends add up (see Privacy). ``"basic"``: the spends' guarantees add, which
        holds however each release was chosen. ``"tight"``: each spend's events (what the
        release is, :mod:`dpkit.accounting.events`) are composed by the tightest valid
        analysis; under a ``PureDP`` or ``ZCDP`` budget this holds however each release was
        chosen, under an ``ApproxDP`` budget with delta > 0 for a sequence of releases fixed
        in advance (see Privacy). Stored in the ledger. ``None`` (default) adopts an
        existing ledger's (``"basic"`` for a ledger that stored none); otherwise it is
        ``"tight"`` wherever that holds however the releases are chosen (a ``PureDP`` or
        ``ZCDP`` budget, or delta 0) and ``"basic"`` for an ``ApproxDP`` budget with
        delta > 0.

    Attributes
    ----------
    budget : PureDP, ApproxDP or ZCDP
        The total allowed.
    relation : str
        The budget's neighbour relation.
    ledger : pathlib.Path or None
        The ledger file, if any.
    composition : str
        ``"tight"`` or ``"basic"``.

    Raises
    ------
    TypeError
        If ``budget`` is not a privacy-loss value or ``ledger`` is not a path.
    ParameterError
        If the budget is zero or invalid, ``relation`` is not 'bounded' or 'unbounded', or
        ``zcdp_delta`` is invalid or given with a budget that is not ApproxDP.
    LedgerError
        If the ledger file is unreadable, corrupt, not a dpkit ledger, or was created with a
        different budget or relation. A bad file is never replaced.

    Privacy
    -------
    Spends compose sequentially (Dwork and Roth 2014, Theorem 3.16; Bun and Steinke 2016,
    Lemma 1.7 for zCDP): the released outputs are jointly ``budget``-DP as long as every
    mechanism spends its guarantee here before drawing noise. Spends of another type are
    converted explicitly and the conversion is recorded next to the request:

    ============  ==========================================  ============================
    budget        PureDP / ApproxDP(delta = 0) spend          other spends
    ============  ==========================================  ============================
    PureDP        charged as is                               refused (TypeError)
    ApproxDP      charged as is (ApproxDP too)                ZCDP: zcdp_to_approx with
                                                              ``zcdp_delta``, else refused
    ZCDP          epsilon^2 / 2 (Bun-Steinke Prop. 1.4)       ApproxDP with delta > 0:
                                                              refused (no zCDP bound)
    ============  ==========================================  ============================

    **Neighbour relations.** Every spend states the relation its guarantee holds under
    (``spend(..., relation=)``, passed by every mechanism and framework). Guarantees under
    different relations are never added as if they were the same:

    ==================  ===========================  =========================================
    budget relation     spend "unbounded"            spend "bounded"
    ==================  ===========================  =========================================
    "unbounded"         charged as is                refused (ParameterError): replace-one DP
                                                     does not imply add/remove DP
    "bounded"           converted by group privacy   charged as is
                        (k = 2, ``replace_one_
                        cost``): eps -> 2 eps,
                        (eps, d) -> (2 eps,
                        (1 + e^eps) d),
                        rho -> 4 rho
    ==================  ===========================  =========================================

    The relation conversion comes first, then the type conversion above; the spend records
    both the requested cost and relation and what was charged.

    **Tight composition** (``composition="tight"``). Every recorded spend is described by its
    events (a spend that stated none by its guarantee alone: ``Approx(epsilon, delta)`` or
    ``Zcdp(rho)``; a spend converted from another relation by its converted guarantee), and:

    ==============  =========================================================================
    budget          a spend is refused when
    ==============  =========================================================================
    PureDP          the epsilons add past the budget: for pure DP, basic composition is
                    already tight, so ``"tight"`` and ``"basic"`` agree
    ApproxDP        :func:`~dpkit.accounting.compose` of every spend's events, this one's
                    included, gives an epsilon at the budget's delta above the budget's
                    epsilon (the smallest over privacy-loss distributions, Renyi DP, zCDP,
                    exact Gaussian, advanced and basic composition; a delta of 0 composes as
                    basic)
    ZCDP            the rhos add past the budget, each spend charged the smaller of its
                    guarantee's rho and its events' (``epsilon**2 / 8`` for the exponential
                    mechanism, a bounded-range mechanism)
    ==============  =========================================================================

    Every analysis is a valid upper bound on the composition of the recorded events, so the
    smallest is one too, for the recorded sequence of releases. Used to stop spending, an
    analysis is a privacy filter, which must also hold when each release (its mechanism and
    its parameters) is chosen from earlier outputs. That is proven for basic composition
    (Rogers et al. 2016), Renyi DP and zCDP (Feldman and Zrnic 2021; Whitehouse et al. 2023)
    and Gaussian DP (Smith and Thakurta 2022), each on its own; the natural filter on
    privacy-loss distributions is invalid (below), and nothing is known for the smallest of
    several analyses. Hence:

    * under a ``PureDP`` or ``ZCDP`` budget, ``"tight"`` holds however the releases were
      chosen (one analysis: the epsilons, or the rhos, add), and it is the default;
    * under an ``ApproxDP`` budget, ``"tight"``'s guarantee is that of a workload fixed in
      advance: the releases (mechanisms, parameters, how many) decided before the first is
      made, as a report's planned tables or a training run's steps are. The natural filter
      on privacy-loss distributions (compose every release's trade-off curve, stop when the
      budget's is crossed) is invalid under adaptive choice (Honkela, Koskela, Tran and
      Raisa 2026). An analyst who picks the next release after seeing the last should
      keep ``"basic"`` (the default for this budget), whose refusal holds whatever the
      order, or state the budget in zCDP (``Accountant(approx_to_zcdp(epsilon, delta))``):
      the rhos then add, a filter under adaptive choice that is much tighter than adding
      epsilons over many small releases, and looser over a few large ones.
      :meth:`composed` shows what each analysis says of the recorded releases either way.

    Notes
    -----
    **Exact arithmetic.** Every float is a dyadic rational, so the accountant adds spends as
    :class:`fractions.Fraction` values and compares ``spent + request <= budget`` exactly: the
    recorded total can never creep past the budget through rounding. The flip side is that
    the float ``0.1`` is 0.1000000000000000055511151231257827..., so ten spends of
    ``PureDP(0.1)`` total slightly *more* than ``PureDP(1.0)`` and the tenth is refused (the
    noise of each was calibrated to that float, so this is the honest total). Spend
    :attr:`remaining` (rounded down) to use up a budget exactly, or use budgets and costs
    that are sums of powers of two (0.5, 0.25, 0.125, ...).

    **Atomicity and durability.** In memory, check-and-record is one critical section under a
    lock. With a ledger it is one SQLite ``BEGIN IMMEDIATE`` transaction (WAL mode,
    ``synchronous=FULL``), committed before :meth:`spend` returns; a process killed before the
    commit spent nothing and released nothing, one killed after it has its spend on disk.

    **Processes.** Open the same ledger path in each process (or pass the accountant to a
    ``spawn``/``forkserver`` worker: it pickles as its path and reopens). An in-memory
    accountant cannot be pickled, because a copy would be a second budget. Each spend costs
    one small transaction and an fsync (about 3 ms here; 50 us in memory). Keep ledgers on a
    local filesystem: SQLite's WAL mode relies on shared memory and does not work over NFS.

    References
    ----------
    C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014.
    M. Bun and T. Steinke, "Concentrated Differential Privacy", TCC 2016.
    R. Rogers, A. Roth, J. Ullman and S. Vadhan, "Privacy Odometers and Filters:
    Pay-as-you-Go Composition", NeurIPS 2016.
    V. Feldman and T. Zrnic, "Individual Privacy Accounting via a Renyi Filter", NeurIPS 2021.
    A. Honkela, A. Koskela, L. Tran and O. Raisa, "f-Differential Privacy Filters: Validity
    and Approximate Solutions", arXiv:2602.06756, 2026.

    Examples
    --------
    >>> from dpkit import Accountant, BudgetExceededError, PureDP
    >>> acct = Accountant(PureDP(1.0))
    >>> _ = acct.spend(PureDP(0.25), label="count")
    >>> _ = acct.spend(PureDP(0.5), label="mean age")
    >>> acct.remaining
    PureDP(epsilon=0.25)
    >>> try:
    ...     acct.spend(PureDP(0.5), label="median age")
    ... except BudgetExceededError as err:
    ...     print(err.remaining)
    PureDP(epsilon=0.25)
    >>> [s.label for s in acct.history]
    ['count', 'mean age']
    """

    __slots__ = (
        "_budget",
        "_cache",
        "_composition",
        "_counts",
        "_limit",
        "_relation",
        "_seen",
        "_store",
        "_tight_lock",
        "_timeout",
        "_zcdp_delta",
        "ledger",
    )

    def __init__(
        self,
        budget: PrivacyLoss,
        *,
        relation: str = "unbounded",
        ledger: str | os.PathLike[str] | None = None,
        zcdp_delta: float | None = None,
        busy_timeout: float = 60.0,
        composition: str | None = None,
    ) -> None:
        relation = check_relation("Accountant", relation)
        self._setup(
            _check_budget(budget),
            relation,
            ledger,
            zcdp_delta,
            busy_timeout,
            exclusive=False,
            composition=_check_composition(composition),
        )

    def _setup(
        self,
        budget: PrivacyLoss | None,
        relation: Any,
        ledger: Any,
        zcdp_delta: Any,
        busy_timeout: Any,
        *,
        exclusive: bool,
        composition: str | None = None,
    ) -> None:
        self._tight_lock = threading.Lock()
        self._counts: dict[Event, int] = {}
        self._seen = 0
        self._cache: tuple[int, Composition] | None = None
        self._timeout = check_positive("Accountant", "busy_timeout", busy_timeout)
        # validate everything that can be validated before a ledger file is touched
        if zcdp_delta is not None:
            zcdp_delta = check_delta("Accountant", zcdp_delta, allow_zero=False, name="zcdp_delta")
            if budget is not None:
                self._check_zcdp_delta_applies(budget)
        if ledger is not None and (
            not isinstance(ledger, str | os.PathLike) or isinstance(ledger, bytes)
        ):
            raise TypeError(
                "Accountant: `ledger` must be a path (str or os.PathLike) or None; got "
                f"{type(ledger).__name__} {ledger!r}"
            )
        self._store: MemoryStore | SQLiteStore
        if ledger is None:
            if budget is None:  # pragma: no cover - guarded by the public constructors
                raise ParameterError("Accountant: a budget is needed without a ledger")
            self.ledger: Path | None = None
            self._store = MemoryStore()
            self._budget = budget
            self._relation: str = relation or "unbounded"
            self._composition: str = composition or default_composition(budget)
        else:
            self.ledger = Path(os.fspath(ledger))
            store = SQLiteStore(
                self.ledger,
                budget,
                relation,
                timeout=self._timeout,
                exclusive=exclusive,
                composition=composition,
            )
            self._store = store
            self._budget = store.budget
            self._relation = store.relation
            self._composition = store.composition
            if zcdp_delta is not None:
                try:
                    self._check_zcdp_delta_applies(self._budget)
                except ParameterError:
                    store.close()
                    raise
        self._zcdp_delta: float | None = zcdp_delta
        self._limit = self._as_pair(self._budget)

    @staticmethod
    def _check_zcdp_delta_applies(budget: PrivacyLoss) -> None:
        if not isinstance(budget, ApproxDP):
            raise ParameterError(
                f"Accountant: `zcdp_delta` only applies to an ApproxDP budget; the budget is "
                f"{budget!r}"
            )

    @classmethod
    def open(
        cls,
        ledger: str | os.PathLike[str],
        *,
        zcdp_delta: float | None = None,
        busy_timeout: float = 60.0,
        composition: str | None = None,
    ) -> Accountant:
        """Open an existing ledger with the budget it was created with.

        Parameters
        ----------
        ledger : str or os.PathLike
            An existing ledger file (never created here).
        zcdp_delta, busy_timeout, composition
            As for :class:`Accountant` (``composition=None`` adopts the ledger's).

        Returns
        -------
        Accountant
            An accountant spending from the ledger's own budget, under its own relation.

        Raises
        ------
        LedgerError
            If there is no ledger at ``ledger``, or the file is unreadable, corrupt, not a
            dpkit ledger, or its totals disagree with its spends.
        ParameterError
            If ``zcdp_delta`` is invalid or the ledger's budget is not ApproxDP.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from dpkit import Accountant, ApproxDP
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = pathlib.Path(tmp) / "budget.sqlite"
        ...     Accountant.create(path, ApproxDP(1.0, 1e-6)).close()
        ...     with Accountant.open(path) as acct:
        ...         print(acct.budget)
        ApproxDP(epsilon=1.0, delta=1e-06)
        """
        self = cls.__new__(cls)
        self._setup(
            None,
            None,
            ledger,
            zcdp_delta,
            busy_timeout,
            exclusive=False,
            composition=_check_composition(composition),
        )
        return self

    @classmethod
    def create(
        cls,
        ledger: str | os.PathLike[str],
        budget: PrivacyLoss,
        *,
        relation: str = "unbounded",
        zcdp_delta: float | None = None,
        busy_timeout: float = 60.0,
        composition: str | None = None,
    ) -> Accountant:
        """Create a new ledger with ``budget``, refusing to touch an existing file.

        Parameters
        ----------
        ledger : str or os.PathLike
            The file to create; its folder must exist.
        budget : PureDP, ApproxDP or ZCDP
            The total allowed, recorded in the ledger for good.
        relation : {"unbounded", "bounded"}
            The budget's neighbour relation, recorded in the ledger for good.
        zcdp_delta, busy_timeout
            As for :class:`Accountant`.
        composition : {"tight", "basic"}, optional
            How spends add up (see :class:`Accountant`), recorded in the ledger for good;
            ``None`` (default) takes the budget's default, as :class:`Accountant` does.

        Returns
        -------
        Accountant
            An accountant on the new, empty ledger.

        Raises
        ------
        LedgerError
            If ``ledger`` already exists (whatever it holds) or cannot be created.
        TypeError, ParameterError
            As for :class:`Accountant`.

        Notes
        -----
        The ledger is built in a private temporary file and linked into place with
        ``os.link``, which fails if the name exists: of several processes racing to create the
        same ledger exactly one succeeds, and nobody ever sees a half-initialised file.
        """
        relation = check_relation("Accountant", relation)
        self = cls.__new__(cls)
        mode = _check_composition(composition)
        self._setup(
            _check_budget(budget),
            relation,
            ledger,
            zcdp_delta,
            busy_timeout,
            exclusive=True,
            composition=mode,
        )
        return self

    # -- conversions ---------------------------------------------------------------------

    @staticmethod
    def _as_pair(loss: PrivacyLoss) -> Pair:
        if isinstance(loss, ZCDP):
            return Fraction(loss.rho), Fraction(0)
        if isinstance(loss, PureDP):
            return Fraction(loss.epsilon), Fraction(0)
        return Fraction(loss.epsilon), Fraction(loss.delta)

    def _pair_to_loss(self, pair: Pair, *, up: bool) -> PrivacyLoss:
        rnd = ceil_float if up else floor_float
        if isinstance(self._budget, ZCDP):
            return ZCDP(rnd(pair[0]))
        if isinstance(self._budget, PureDP):
            return PureDP(rnd(pair[0]))
        return ApproxDP(rnd(pair[0]), rnd(pair[1]))

    def _shown(self, pair: Pair) -> str:
        """A charge for a message (one beyond every float, e.g. 1e300**2 / 2, in words)."""
        if math.isfinite(ceil_float(pair[0])):
            return repr(self._pair_to_loss(pair, up=True))
        return "more than the largest float"

    def _under_budget_relation(self, cost: PrivacyLoss, relation: str) -> PrivacyLoss:
        """``cost`` (holding under ``relation``) as a guarantee under the budget's relation."""
        if relation == self._relation:
            return cost
        if self._relation == "unbounded":
            raise ParameterError(
                f"Accountant.spend: {cost!r} holds under replace-one neighbours "
                "(relation='bounded'), and replace-one DP does not imply add/remove DP; this "
                "budget protects add/remove neighbours (relation='unbounded'). Spend it from an "
                "Accountant(..., relation='bounded'), or use a mechanism private under "
                "add/remove. Nothing was spent."
            )
        return replace_one_cost(cost)

    def _charge(self, cost: PrivacyLoss) -> Pair:
        """The exact charge of ``cost`` against this budget, or a TypeError if it has none."""
        budget = self._budget
        pure = isinstance(cost, PureDP) or (isinstance(cost, ApproxDP) and cost.delta == 0)
        if isinstance(budget, PureDP):
            if pure:
                return Fraction(cost.epsilon), Fraction(0)  # type: ignore[union-attr]
            raise TypeError(
                f"Accountant.spend: a pure epsilon-DP budget ({budget!r}) cannot pay for "
                f"{cost!r}, which is not pure epsilon-DP; use an ApproxDP budget"
                + (" with zcdp_delta=" if isinstance(cost, ZCDP) else "")
            )
        if isinstance(budget, ApproxDP):
            if isinstance(cost, ZCDP):
                if self._zcdp_delta is None:
                    raise TypeError(
                        f"Accountant.spend: an (epsilon, delta) budget ({budget!r}) cannot pay "
                        f"for {cost!r} without a conversion; create the accountant with "
                        "zcdp_delta=... to convert each zCDP spend with zcdp_to_approx, or use "
                        "a ZCDP budget"
                    )
                conv = zcdp_to_approx(cost, self._zcdp_delta)
                return Fraction(conv.epsilon), Fraction(conv.delta)
            return self._as_pair(cost)
        # zCDP budget
        if isinstance(cost, ZCDP):
            return Fraction(cost.rho), Fraction(0)
        if pure:
            return Fraction(cost.epsilon) ** 2 / 2, Fraction(0)
        raise TypeError(
            f"Accountant.spend: a zCDP budget ({budget!r}) cannot pay for {cost!r}: "
            "(epsilon, delta)-DP with delta > 0 implies no zCDP bound; use an ApproxDP budget"
        )

    # -- the contract ----------------------------------------------------------------------

    def spend(
        self,
        cost: PrivacyLoss,
        *,
        label: str,
        relation: str = "unbounded",
        events: Iterable[Event] | None = None,
    ) -> Spend:
        """Check ``cost`` against what remains and record it, atomically; or refuse.

        Parameters
        ----------
        cost : PureDP, ApproxDP or ZCDP
            The guarantee of the release about to be made.
        label : str
            What the release is (shown in :attr:`history` and ``dpkit budget show``).
        relation : {"unbounded", "bounded"}
            The neighbour relation ``cost`` holds under (mechanisms pass their own). Converted
            to the budget's relation or refused (see the table in :class:`Accountant`).
        events : list of dpkit.accounting.events descriptors, optional
            What the release is, for accounting (under ``relation``), recorded beside the
            spend (and in the ledger) for analyses tighter than the charge's; the charge
            itself is ``cost``'s.

        Returns
        -------
        Spend
            The recorded spend (already durable when a ledger is used).

        Raises
        ------
        BudgetExceededError
            If the spend would take the total past the budget. Nothing is recorded; the error
            carries ``requested`` (``cost``) and ``remaining`` (in the budget's type).
        TypeError
            If ``cost`` is not a loss, has no conversion to the budget's type (see the table
            in :class:`Accountant`), ``label`` or ``relation`` is not a str, or ``events``
            holds something that is not an event descriptor.
        ParameterError
            If ``cost`` has a negative, NaN or infinite parameter, ``label`` is empty, or
            ``relation`` is ``"bounded"`` against an add/remove budget.
        LedgerError
            If the ledger cannot be written (busy beyond ``busy_timeout``, disk error) or the
            accountant was closed. Nothing is spent, so the caller must not release.

        Privacy
        -------
        Call it before drawing any noise; a release may proceed only once it has returned.

        Notes
        -----
        Amortised O(1): one lock (in memory) or one SQLite transaction with one fsync (ledger).
        A spend that cannot fit even now is refused from a snapshot read without taking the
        write lock, since totals only grow.

        Examples
        --------
        >>> from dpkit import Accountant, ZCDP, PureDP
        >>> acct = Accountant(ZCDP(0.5))
        >>> acct.spend(PureDP(0.5), label="count").charge  # converted: 0.5^2 / 2
        ZCDP(rho=0.125)
        """
        label = _check_label(label)
        cost = _check_cost(cost)
        relation = check_relation("Accountant.spend", relation)
        described = _check_events(events)
        under = self._under_budget_relation(cost, relation)
        if self._composes_events:
            return self._spend_composed(label, cost, under, relation, described)
        charge = self._charge(under)
        if self._composition == "tight" and isinstance(self._budget, ZCDP):
            charge = (min(charge[0], self._events_rho(cost, relation, described)), charge[1])
        timestamp = datetime.now(UTC)
        index, totals = self._store.try_append(
            label, cost, charge, timestamp, self._limit, relation, described
        )
        if index is None:
            remaining = self._remaining_from(totals)
            converted = (
                f" (charged as {self._shown(charge)})"
                if isinstance(self._budget, ZCDP) != isinstance(cost, ZCDP)
                or relation != self._relation
                else ""
            )
            raise BudgetExceededError(
                f"Accountant: spending {cost!r}{converted} for {label!r} would exceed the budget "
                f"{self._budget!r}; already spent {self._pair_to_loss(totals, up=True)!r}, "
                f"remaining {remaining!r}. Nothing was spent or released.",
                requested=cost,
                remaining=remaining,
            )
        return Spend(
            index, label, cost, self._pair_to_loss(charge, up=True), timestamp, relation, described
        )

    # -- tight composition ---------------------------------------------------------------

    @property
    def _composes_events(self) -> bool:
        """Whether spends are checked by composing events (tight, ApproxDP with delta > 0)."""
        budget = self._budget
        return self._composition == "tight" and isinstance(budget, ApproxDP) and budget.delta > 0

    def _events_of(
        self, cost: PrivacyLoss, relation: str, events: tuple[Event, ...]
    ) -> tuple[Event, ...]:
        """A spend's events under the budget's relation: its own, or its guarantee alone
        (when it stated none, or holds under another relation and was converted)."""
        if relation != self._relation:
            return (plain_event(replace_one_cost(cost)),)
        return events or (plain_event(cost),)

    def _events_rho(self, cost: PrivacyLoss, relation: str, events: tuple[Event, ...]) -> Fraction:
        """The zCDP charge the events give (``inf`` as a huge value when they give none)."""
        evs = self._events_of(cost, relation, events)
        if any(isinstance(e, KeySelection) or (isinstance(e, Approx) and e.delta) for e in evs):
            return Fraction(2) ** 4096  # a delta has no zCDP bound: the guarantee's charge
        rho = _rdp.rho(tuple((e, 1) for e in evs))
        return Fraction(rho) if math.isfinite(rho) else Fraction(2) ** 4096

    def _fold(self, rows: list[Row]) -> None:
        """Add the rows not yet counted to the running multiset of events (lock held)."""
        for row in rows:
            if row.seq <= self._seen:
                continue
            for event in self._events_of(row.cost, row.relation, row.events):
                self._counts[event] = self._counts.get(event, 0) + 1
            self._seen = row.seq

    def _items(self, extra: tuple[Event, ...] = ()) -> tuple[tuple[Event, int], ...]:
        counts = dict(self._counts)
        for event in extra:
            counts[event] = counts.get(event, 0) + 1
        return tuple(counts.items())

    def _compose(
        self, items: tuple[tuple[Event, int], ...], methods: Iterable[str] | None = None
    ) -> Composition:
        assert isinstance(self._budget, ApproxDP)
        return compose_as_charged(items, self._budget.delta, methods)

    def _fits_composed(self, items: tuple[tuple[Event, int], ...], kept: list[Composition]) -> bool:
        """Whether the tightest epsilon of ``items`` at the budget's delta is within budget:
        the analyses other than PLD first (any within budget decides), then PLD alone (the
        smallest of all is within budget exactly when one of them is). Past the PLD limit
        the first composition is the whole of it, and is appended to ``kept``."""
        limit = self._budget.epsilon  # type: ignore[union-attr]
        try:
            cheap = self._compose(items, methods=_CHEAP)
            if len(items) > ACCOUNTANT_PLD_DISTINCT:  # no PLD: the cheap ones were all
                kept.append(cheap)
                return cheap.epsilon <= limit
            if cheap.epsilon <= limit:
                return True
            return self._compose(items, methods=("pld",)).epsilon <= limit
        except (ArithmeticError, ValueError):  # beyond floats, or no PLD: no admission
            return False

    def _refresh(self) -> tuple[int, tuple[tuple[Event, int], ...]]:
        """Count the spends recorded since the last look (by any user of the ledger)."""
        rows = self._store.since(self._seen)
        with self._tight_lock:
            self._fold(rows)
            return self._seen, self._items()

    def _spend_composed(
        self,
        label: str,
        cost: PrivacyLoss,
        converted: PrivacyLoss,
        relation: str,
        described: tuple[Event, ...],
    ) -> Spend:
        new = self._events_of(cost, relation, described)
        budget = self._budget
        assert isinstance(budget, ApproxDP)
        if isinstance(converted, ZCDP):  # no basic charge without zcdp_delta: shown converted
            shown = zcdp_to_approx(converted, self._zcdp_delta or budget.delta)
            charge = (Fraction(shown.epsilon), Fraction(shown.delta))
        else:
            charge = self._as_pair(converted)

        kept: list[Composition] = []  # the admission's composition, when it is the whole

        def admit(read_since: Any, totals: Pair) -> bool:
            with self._tight_lock:
                kept.clear()
                # every spend before this one is counted before this one is (in order)
                self._fold(read_since(self._seen))
                # the charges' basic composition is a valid bound too: never stricter than it
                if fits(totals, charge, self._limit):
                    return True
                return self._fits_composed(self._items(new), kept)

        timestamp = datetime.now(UTC)
        index, _ = self._store.try_append(
            label, cost, charge, timestamp, self._limit, relation, described, admit=admit
        )
        if index is None:
            which, c, totals = self._tight_spent()
            spent = self._spent_composed(which, c, totals)
            remaining = self._remaining_composed(which, c, totals)
            after = self._compose(self._refresh()[1] + tuple((e, 1) for e in new))
            raise BudgetExceededError(
                f"Accountant: spending {cost!r} for {label!r} would take the ledger to epsilon "
                f"{after.epsilon!r} at delta {budget.delta!r} (tight composition, "
                f"{after.method}), past the budget {budget!r}; already spent {spent!r}, "
                f"remaining {remaining!r}. Nothing was spent or released.",
                requested=cost,
                remaining=remaining,
            )
        with self._tight_lock:
            self._fold([Row(index, cost, relation, described)])
            if kept and self._seen == index:
                # admitted inside this spend's write transaction, after every spend before
                # it: its composition is that of the spends up to this one
                self._cache = (index, kept[0])
        return Spend(
            index, label, cost, self._pair_to_loss(charge, up=True), timestamp, relation, described
        )

    def composed(self, *, delta: float | None = None) -> Composition:
        """Every recorded spend's events composed by every analysis that applies.

        Parameters
        ----------
        delta : float, optional
            The delta to report epsilon at; by default the budget's (an ApproxDP budget with
            delta > 0; required otherwise).

        Returns
        -------
        Composition
            ``epsilon`` (the tightest), ``method`` (the analysis that gave it), ``by_method``
            (epsilon under each analysis), ``lower``, ``delta_at`` (see
            :func:`dpkit.accounting.compose`; the PLD analysis on a grid of
            :data:`ACCOUNTANT_PLD_POINTS`, and only up to :data:`ACCOUNTANT_PLD_DISTINCT`
            distinct events). A spend that stated no events counts as its guarantee alone;
            one converted from another relation as its converted guarantee.

        Raises
        ------
        ParameterError
            No ``delta`` is given and the budget has none, or ``delta`` is not in ``(0, 1)``.

        Examples
        --------
        >>> from dpkit import Accountant, ApproxDP
        >>> from dpkit.accounting import events as ev
        >>> acct = Accountant(ApproxDP(5.0, 1e-5), composition="tight")
        >>> for _ in range(100):
        ...     _ = acct.spend(ApproxDP(0.1, 0.0), label="count", events=[ev.Laplace(scale=10.0)])
        >>> c = acct.composed()
        >>> c.method, round(c.epsilon, 2), c.by_method["basic"] > 10
        ('pld', 4.22, True)
        """
        own = isinstance(self._budget, ApproxDP) and self._budget.delta > 0
        if delta is None and not own:
            raise ParameterError(
                f"Accountant.composed: the budget {self._budget!r} has no delta; pass "
                "delta=..., a number in (0, 1)"
            )
        seen, items = self._refresh()
        if delta is not None:
            return compose_as_charged(items, delta)
        with self._tight_lock:
            if self._cache is not None and self._cache[0] == seen:
                return self._cache[1]
        result = self._compose(items)
        with self._tight_lock:
            self._cache = (seen, result)
        return result

    def _tight_spent(self) -> tuple[str, Composition, Pair]:
        """Which bound the spends stand at (``"charged"``: the charges' basic composition,
        within the budget's delta and no larger than the events'; ``"composed"``: the
        events' tightest epsilon), the events' composition and the charges' totals."""
        totals = self._store.totals()
        c = self.composed()
        if totals[1] <= self._limit[1] and totals[0] <= Fraction(c.epsilon):
            return "charged", c, totals
        return "composed", c, totals

    def _spent_composed(self, which: str, c: Composition, totals: Pair) -> PrivacyLoss:
        """What :meth:`_tight_spent`'s ``(which, c, totals)`` say was spent, rounded up."""
        if which == "charged":
            return self._pair_to_loss(totals, up=True)
        return ApproxDP(c.epsilon, self._budget.delta)  # type: ignore[union-attr]

    def _remaining_composed(self, which: str, c: Composition, totals: Pair) -> PrivacyLoss:
        """What :meth:`_tight_spent`'s ``(which, c, totals)`` leave, rounded down."""
        if which == "charged":
            return self._remaining_from(totals)
        left = max(Fraction(self._budget.epsilon) - Fraction(c.epsilon), Fraction(0))  # type: ignore[union-attr]
        return ApproxDP(floor_float(left), 0.0)

    def attach_record(self, index: int, record: Mapping[str, Any]) -> None:
        """Keep the public record of the release that spend ``index`` paid for.

        A release spends first and releases after; once it is made, its record (what it
        released and how: :mod:`dpkit.session._record` writes the Session's) is kept beside
        the spend, in the ledger when there is one, for ``dpkit report`` and
        :meth:`records`. Each spend keeps at most one record.

        Parameters
        ----------
        index : int
            The spend's :attr:`Spend.index`.
        record : Mapping
            A mapping that serialises to strict JSON (no NaN or infinity). It is stored as
            JSON text: released values are public, and the ledger then holds them.

        Raises
        ------
        TypeError
            ``record`` is not a mapping, or does not serialise to JSON.
        ParameterError
            The spend already has a record.
        LedgerError
            No such spend, or the ledger cannot be written.
        """
        if not isinstance(record, Mapping):
            raise TypeError(
                f"Accountant.attach_record: `record` must be a mapping; got {type(record).__name__}"
            )
        try:
            text = json.dumps(record, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"Accountant.attach_record: `record` is not JSON: {exc}") from None
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(
                f"Accountant.attach_record: `index` must be a spend's int index; got {index!r}"
            )
        if not self._store.attach(index, text):
            raise ParameterError(
                f"Accountant.attach_record: spend #{index} has a record already; records are "
                "written once"
            )

    def records(self) -> dict[int, dict[str, Any]]:
        """Every release record kept beside a spend (:meth:`attach_record`), by spend index.

        Returns
        -------
        dict
            ``{spend index: record}``, oldest first, each record as its JSON decodes.

        Raises
        ------
        LedgerError
            The ledger cannot be read, or a record is not JSON (a corrupt ledger).
        """
        out: dict[int, dict[str, Any]] = {}
        for index, text in self._store.records().items():
            try:
                out[index] = json.loads(text)
            except ValueError as exc:
                where = (
                    "in-memory ledger" if self.ledger is None else f"ledger {str(self.ledger)!r}"
                )
                raise LedgerError(
                    f"{where} is corrupt: the record of spend #{index}: {exc}"
                ) from None
        return out

    def labelled(self, name: str) -> LabelledAccountant:
        """A view of this accountant whose spends are labelled ``"name: <mechanism label>"``.

        Mechanisms label their spends with their own name ("Laplace"); pass
        ``accountant=acct.labelled("count of adults")`` to say what each release was for.
        The view spends from the same budget; everything else is delegated.

        Parameters
        ----------
        name : str
            What the releases through this view are for ("count of adults").

        Returns
        -------
        LabelledAccountant
            The view; its ``spend(cost, *, label)`` records ``"name: label"``.

        Raises
        ------
        TypeError
            ``name`` is not a str.
        ParameterError
            ``name`` is empty.

        Examples
        --------
        >>> from dpkit import Accountant, PureDP
        >>> acct = Accountant(PureDP(1.0))
        >>> acct.labelled("count of adults").spend(PureDP(0.5), label="Laplace").label
        'count of adults: Laplace'
        """
        return LabelledAccountant(self, _check_label(name))

    def _remaining_from(self, totals: Pair) -> PrivacyLoss:
        rest = (
            max(self._limit[0] - totals[0], Fraction(0)),
            max(self._limit[1] - totals[1], Fraction(0)),
        )
        return self._pair_to_loss(rest, up=False)

    @property
    def budget(self) -> PrivacyLoss:
        """The total allowed."""
        return self._budget

    @property
    def relation(self) -> str:
        """The neighbour relation the budget protects ("unbounded" or "bounded")."""
        return self._relation

    @property
    def composition(self) -> str:
        """How spends add up: ``"tight"`` or ``"basic"`` (see :class:`Accountant`)."""
        return self._composition

    @property
    def spent(self) -> PrivacyLoss:
        """The total spent so far (by every user of a shared ledger), rounded up.

        Under tight composition with an ApproxDP budget, ``ApproxDP(epsilon, budget.delta)``
        with the tightest epsilon of :meth:`composed` (its ``method`` names the analysis);
        otherwise the sum of the charges.
        """
        if self._composes_events:
            return self._spent_composed(*self._tight_spent())
        return self._pair_to_loss(self._store.totals(), up=True)

    @property
    def remaining(self) -> PrivacyLoss:
        """What is left, rounded down: spending exactly this always succeeds (if unchanged).

        Under tight composition with an ApproxDP budget, the budget's epsilon less the
        tightest epsilon spent, as ``ApproxDP(epsilon, 0)`` (the whole budget before any
        spend); analyses other than basic composition are not additive, so what a spend
        costs depends on what it is: :meth:`composed` and
        :meth:`~dpkit.accounting.Composition.delta_at` tell.
        """
        if self._composes_events:
            return self._remaining_composed(*self._tight_spent())
        return self._remaining_from(self._store.totals())

    @property
    def history(self) -> tuple[Spend, ...]:
        """Every recorded spend, oldest first."""
        return tuple(self._spend_of(e) for e in self._store.entries())

    def _spend_of(self, entry: Entry) -> Spend:
        return Spend(
            entry.seq,
            entry.label,
            entry.cost,
            self._pair_to_loss(entry.charge, up=True),
            entry.timestamp,
            entry.relation,
            entry.events,
        )

    def summary(self) -> str:
        """A plain-text table of the spends, the total spent and what remains.

        Returns
        -------
        str
            The budget and ledger path, one row per spend (index, UTC time, label, requested
            cost, what was charged), then the total spent and what remains: what
            ``dpkit budget show`` prints.

        Examples
        --------
        >>> from dpkit import Accountant, PureDP
        >>> acct = Accountant(PureDP(1.0))
        >>> _ = acct.spend(PureDP(0.25), label="count")
        >>> print(acct.summary().split("\\n")[0])
        budget     PureDP(epsilon=1.0)
        """
        rows = [("#", "recorded (UTC)", "label", "relation", "cost", "charged")]
        for s in self.history:
            rows.append(
                (
                    str(s.index),
                    s.timestamp.strftime("%Y-%m-%d %H:%M:%S"),
                    " ".join(s.label.split()),  # one line per spend, whatever the label
                    s.relation,
                    repr(s.cost),
                    "same" if s.charge == s.cost else repr(s.charge),
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(6)]
        lines = [f"budget     {self._budget!r}", f"relation   {_RELATION_TEXT[self._relation]}"]
        if self.ledger is not None:
            lines.append(f"ledger     {self.ledger}")
        if self._composes_events:
            lines.append("composed   tight (the smallest epsilon of every analysis that applies)")
        lines.append("")
        if len(rows) == 1:
            lines.append("(no spends yet)")
        else:
            for r in rows:
                lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        lines.append("")
        if self._composes_events:  # one composition of the ledger for both lines
            which, c, totals = self._tight_spent()
            total = self._spent_composed(which, c, totals)
            left = self._remaining_composed(which, c, totals)
        else:
            total, left = self.spent, self.remaining
        spent = f"spent      {total!r}  ({len(rows) - 1} spends"
        if self._composes_events and len(rows) > 1:
            if which == "charged":
                spent += "; tight composition: the charges' sum, no larger than any analysis"
            else:
                spent += (
                    f"; tight composition: {c.method}, the charges' sum: epsilon "
                    f"{ceil_float(totals[0])!r}"
                )
        lines.append(spent + ")")
        lines.append(f"remaining  {left!r}")
        return "\n".join(lines)

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the ledger connection; later spends raise :class:`LedgerError`.

        An in-memory accountant has nothing to close and keeps working.
        """
        self._store.close()

    def __enter__(self) -> Accountant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if self.ledger is None:
            raise TypeError(
                "an in-memory Accountant cannot be pickled or sent to another process: the copy "
                "would be a second, independent budget. Use Accountant(..., ledger='file.sqlite')"
            )
        return (
            _reopen,
            (
                str(self.ledger),
                self._budget,
                self._zcdp_delta,
                self._timeout,
                self._relation,
                self._composition,
            ),
        )

    def __repr__(self) -> str:
        where = "" if self.ledger is None else f", ledger={str(self.ledger)!r}"
        rel = "" if self._relation == "unbounded" else f", relation={self._relation!r}"
        return f"Accountant(budget={self._budget!r}{rel}, spent={self.spent!r}{where})"


class LabelledAccountant:
    """An :class:`Accountant` seen through :meth:`Accountant.labelled`: same budget, named
    spends."""

    __slots__ = ("accountant", "name")

    def __init__(self, accountant: Accountant, name: str) -> None:
        self.accountant = accountant
        self.name = name

    def spend(
        self,
        cost: PrivacyLoss,
        *,
        label: str,
        relation: str = "unbounded",
        events: Iterable[Event] | None = None,
    ) -> Spend:
        """:meth:`Accountant.spend` with the label ``"<name>: <label>"``."""
        return self.accountant.spend(
            cost, label=f"{self.name}: {_check_label(label)}", relation=relation, events=events
        )

    def __getattr__(self, attr: str) -> Any:
        if attr in LabelledAccountant.__slots__:  # not yet set (e.g. while unpickling)
            raise AttributeError(attr)
        return getattr(self.accountant, attr)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (LabelledAccountant, (self.accountant, self.name))

    def __repr__(self) -> str:
        return f"{self.accountant!r}.labelled({self.name!r})"


def _reopen(
    ledger: str,
    budget: PrivacyLoss,
    zcdp_delta: float | None,
    timeout: float,
    relation: str = "unbounded",
    composition: str | None = None,
) -> Accountant:
    return Accountant(
        budget,
        relation=relation,
        ledger=ledger,
        zcdp_delta=zcdp_delta,
        busy_timeout=timeout,
        composition=composition,
    )
