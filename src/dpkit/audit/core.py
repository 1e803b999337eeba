"""The empirical privacy audit: :func:`audit` and its result."""

from __future__ import annotations

import inspect
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpkit._validate import check_delta, check_int, check_number, check_positive
from dpkit.accounting.loss import ZCDP, ApproxDP, PrivacyLoss, PureDP
from dpkit.audit._binomial import binomial_lower, binomial_upper
from dpkit.audit.events import Event, select_event
from dpkit.audit.features import Feature, Featurizer, Outputs, lattice_cells, to_outputs
from dpkit.errors import ParameterError
from dpkit.samplers import as_source

__all__ = [
    "DEFAULT_MAX_SAMPLES",
    "FORMS",
    "MAX_MEMORY",
    "MIN_CONFIDENCE",
    "AuditResult",
    "CallForm",
    "LatticeCheck",
    "audit",
    "calling_form",
    "format_table",
    "table_header",
    "table_row",
]

_OWNER = "audit"

#: Draws per input when ``samples=None`` (the time budget usually stops sooner).
DEFAULT_MAX_SAMPLES = 4_000_000
#: Share of the time budget spent drawing; the rest is left for the analysis.
_SAMPLING_SHARE = 0.5
_MIN_SAMPLES = 20
#: The analysis is timed once, on the first draws past this many per input (the "pilot"),
#: and sampling then stops where analysing what was drawn would overrun the time budget.
_PILOT = 4096
#: Margin on the pilot's seconds per draw. Its fixed costs put it at 1 to 8 times the
#: analysis's rate per draw at 10**6 draws, but the analysis sorts, and at 10**7 draws its
#: rate nears the pilot's again (Laplace: 0.9 of it at 1.6 * 10**7); the margin covers that
#: and the noise of a single timing.
_ANALYSIS_SLACK = 1.5
#: Smallest confidence accepted: below 1/2 a correct mechanism is flagged more often than not.
MIN_CONFIDENCE = 0.5
#: Default limit on an audit's estimated memory (``max_memory``), in bytes.
MAX_MEMORY = 2**32
#: Peak memory per draw as a multiple of the bytes of the raw outputs of both inputs: their
#: features on the two halves and the event search (measured: 3 to 12 over dpkit's targets).
_MEMORY_FACTOR = 12
#: The raw outputs' bytes per draw and input when nothing has been drawn yet: one float64,
#: the least any output needs (a frame or vector output needs several times more).
_MIN_OUTPUT_BYTES = 8

#: The clock of the time budget (a test may replace it with a fake one).
_clock = time.perf_counter


@dataclass(frozen=True)
class LatticeCheck:
    """Do the outputs of both inputs fall on the same floating-point lattice?

    Attributes
    ----------
    lowest_bit : (int, int)
        The smallest exponent ``g`` such that some output of input 0 (resp. 1) is an odd
        multiple of ``2**g``: outputs of a mechanism on the lattice ``2**g * Z`` never go
        below ``g``.
    exclusive : (float, float)
        The share of input 0's (resp. 1's) outputs lying in a lattice cell (binade and
        lowest bit) that no output of the other input reached, over all draws. Near 0 for a
        mechanism on a fixed lattice; large when outputs identify their input (Mironov 2012).
    epsilon_lower_bound, event
        The audit restricted to lattice events (cells, lowest bits, residues modulo the
        finest power-of-two gap), with the same held-out evaluation as the main bound.
    consistent : bool
        ``epsilon_lower_bound`` does not exceed the claimed epsilon.
    """

    lowest_bit: tuple[int, int]
    exclusive: tuple[float, float]
    epsilon_lower_bound: float
    event: str
    consistent: bool


@dataclass(frozen=True)
class AuditResult:
    """What an audit established (see :func:`audit`).

    Attributes
    ----------
    epsilon_lower_bound : float
        With probability at least ``confidence`` (over the audit's own draws), the function's
        true epsilon at ``delta`` is at least this on the audited pair of inputs.
    event : str
        The event giving the bound (chosen on the selection half).
    samples : int
        Outputs drawn per input (half to select the event, half to evaluate it).
    verdict : {"pass", "violation"}
        ``"violation"`` when ``epsilon_lower_bound`` exceeds the claimed epsilon.
    claimed_epsilon, delta, confidence
        The claim tested: ``P[M(x) in E] <= exp(claimed_epsilon) P[M(x') in E] + delta``.
    claim : PrivacyLoss
        The claim as given (a zCDP claim is tested as the ``(epsilon, delta)`` it implies).
    counts : (int, int)
        Event hits on the evaluation half: under the favoured input, under the other.
    evaluation_samples : int
        Draws per input in the evaluation half.
    epsilon_estimate : float
        The plug-in ``log((p_fav - delta) / p_other)`` on the evaluation half (no confidence;
        ``inf`` when the other input never hit the event).
    favours : int
        The input (0 or 1) under which the event is likelier.
    lattice : LatticeCheck or None
        The floating-point lattice check (``None`` when the outputs are not floats).
    seconds : float
        Wall time of the audit.
    time_limited : bool
        Sampling stopped at the time budget before ``samples`` were drawn.
    name : str
        A label for tables.
    form : str
        How the function was called (one of :data:`FORMS`), and ``form_source`` how that
        was decided (:class:`CallForm`); ``str(result)`` says both.
    """

    epsilon_lower_bound: float
    event: str
    samples: int
    verdict: str
    claimed_epsilon: float
    delta: float
    confidence: float
    claim: PrivacyLoss
    counts: tuple[int, int]
    evaluation_samples: int
    epsilon_estimate: float
    favours: int
    lattice: LatticeCheck | None
    seconds: float
    time_limited: bool
    name: str = ""
    form: str = ""
    form_source: str = ""

    def __str__(self) -> str:
        """A few lines: the verdict, the bound against the claim, the event, and how the
        function was called (:class:`CallForm`)."""
        lines = [
            f"audit{' ' + self.name if self.name else ''}: {self.verdict}: epsilon >= "
            f"{self.epsilon_lower_bound:.4f} with confidence {self.confidence:g} against the "
            f"claimed {self.claimed_epsilon:.4g} (delta {self.delta:.3g}), from "
            f"{self.samples:,} draws per input in {self.seconds:.1f} s"
            + (" (stopped at the time budget)" if self.time_limited else ""),
            f"event: {self.event}",
        ]
        if self.form:
            lines.append("function: " + CallForm(self.form, self.form_source).describe())
        if self.lattice is not None and not self.lattice.consistent:
            lines.append(f"lattice leak: epsilon >= {self.lattice.epsilon_lower_bound:.4f}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = asdict(self)
        out["claim"] = repr(self.claim)
        for k in ("epsilon_lower_bound", "epsilon_estimate"):
            if not math.isfinite(out[k]):
                out[k] = str(out[k])
        return out


def _claim(claimed: Any, delta: Any) -> tuple[float, float, PrivacyLoss]:
    dlt = check_delta(_OWNER, delta)
    if isinstance(claimed, PureDP):
        if dlt != 0:
            raise ParameterError(
                f"{_OWNER}: a PureDP claim has delta 0; got delta={delta!r} (claim "
                "ApproxDP(epsilon, delta) to audit an approximate guarantee)"
            )
        return claimed.epsilon, 0.0, claimed
    if isinstance(claimed, ApproxDP):
        if dlt not in (0.0, claimed.delta):
            raise ParameterError(
                f"{_OWNER}: `delta` ({delta!r}) differs from the claim's delta "
                f"({claimed.delta!r}); omit `delta` when claiming ApproxDP"
            )
        return claimed.epsilon, claimed.delta, claimed
    if isinstance(claimed, ZCDP):
        if dlt == 0:
            raise ParameterError(
                f"{_OWNER}: a ZCDP claim is audited as the (epsilon, delta)-DP it implies "
                "(Canonne, Kamath and Steinke 2020, via dpkit.accounting.zcdp_to_approx); pass "
                "delta > 0, for example delta=1e-6"
            )
        from dpkit.accounting.conversions import zcdp_to_approx

        return zcdp_to_approx(claimed.rho, dlt).epsilon, dlt, claimed
    eps = check_positive(_OWNER, "claimed", claimed)
    return eps, dlt, (ApproxDP(eps, dlt) if dlt > 0 else PureDP(eps))


#: How :func:`audit` calls the audited function (``AuditResult.form``).
FORMS: tuple[str, ...] = (
    "func(x)",
    "func(x, rng)",
    "func(x, rng=rng)",
    "func(x, size, rng)",
    "func(x, size, rng=rng)",
)
_BATCHED = ("func(x, size, rng)", "func(x, size, rng=rng)")


@dataclass(frozen=True)
class CallForm:
    """How an audited function is called, and how that was decided.

    Attributes
    ----------
    form : str
        One of :data:`FORMS`. ``"func(x)"``: one output per call, the function drawing its
        own randomness (the audit's ``rng`` does not reach it); ``"func(x, rng)"`` and
        ``"func(x, rng=rng)"``: one output per call from the audit's bit source;
        ``"func(x, size, rng)"`` and ``"func(x, size, rng=rng)"``: ``size`` outputs per call.
    source : str
        ``"signature"`` (read from the function's parameters), ``"batched=True"`` /
        ``"batched=False"`` (as asked), or ``"assumed"`` (no readable signature: the
        per-draw ``func(x, rng)``).
    """

    form: str
    source: str

    @property
    def batched(self) -> bool:
        return self.form in _BATCHED

    @property
    def uses_rng(self) -> bool:
        """Whether the audit's bit source reaches the function."""
        return self.form != "func(x)"

    def describe(self) -> str:
        """One line: the form, how it was decided, and whether ``rng`` reaches the function."""
        how = {
            "signature": "from its signature",
            "assumed": "assumed: its signature cannot be read (pass batched=..., or wrap it "
            "in a lambda)",
        }.get(self.source, f"as asked ({self.source})")
        text = f"called as {self.form} ({how})"
        if not self.uses_rng:
            text += "; it draws its own randomness, so a seeded `rng` does not make it reproducible"
        return text


def calling_form(func: Callable[..., Any], batched: bool | None = None) -> CallForm:
    """Decide how to call ``func`` from its signature, without calling it.

    Batched ``func(x, size, rng)`` when it has a positional parameter named ``size`` or three
    or more required positional parameters (``func(x, size, rng=rng)`` when ``rng`` is
    keyword-only, as on ``Laplace.sample``). Otherwise one output per call: ``func(x, rng)``
    when a second positional parameter is required or named ``rng`` (or the parameters
    are ``*args``), ``func(x, rng=rng)`` when ``rng`` is a keyword-only parameter (as on
    dpkit's mechanisms: ``audit(lap.release, ...)``), else ``func(x)``. ``batched`` forces
    the batched form (``True``) or a per-draw one (``False``).

    Raises
    ------
    TypeError
        ``batched`` not a bool; ``func`` takes no positional parameter for the input, or
        needs more than the chosen form passes.
    """
    if batched is not None and not isinstance(batched, bool):
        raise TypeError(f"{_OWNER}: `batched` must be None or a bool; got {batched!r}")
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # a builtin or extension function without a signature
        if batched:
            return CallForm(_BATCHED[0], "batched=True")
        return CallForm("func(x, rng)", "assumed" if batched is None else "batched=False")
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    star = any(p.kind == p.VAR_POSITIONAL for p in params)
    keyword_rng = any(p.kind == p.KEYWORD_ONLY and p.name == "rng" for p in params)
    names = [p.name for p in positional]
    source = "signature" if batched is None else f"batched={batched}"
    if batched or (batched is None and ("size" in names or len(required) >= 3)):
        if len(required) > 3:
            raise TypeError(
                f"{_OWNER}: the batched form calls func(x, size, rng), but `func` requires "
                f"{len(required)} positional parameters ({', '.join(p.name for p in required)})"
            )
        if len(positional) >= 3 or star:
            return CallForm(_BATCHED[0], source)
        if len(positional) == 2 and keyword_rng:  # Laplace.sample(value, size, *, rng)
            return CallForm(_BATCHED[1], source)
        raise TypeError(
            f"{_OWNER}: the batched form calls func(x, size, rng); `func` takes "
            f"{len(positional)} positional parameter(s) ({', '.join(names) or 'none'})"
        )
    if not positional and not star:
        raise TypeError(
            f"{_OWNER}: `func` must take the input as its first positional parameter: "
            f"func(x), func(x, rng) or func(x, size, rng); its parameters are "
            f"({', '.join(p.name for p in params) or 'none'})"
        )
    if len(required) > 2:
        raise TypeError(
            f"{_OWNER}: with batched=False `func` is called func(x, rng), but it requires "
            f"{len(required)} positional parameters ({', '.join(p.name for p in required)})"
        )
    if star or len(required) == 2 or (len(positional) >= 2 and names[1] == "rng"):
        return CallForm("func(x, rng)", source)
    if keyword_rng:
        return CallForm("func(x, rng=rng)", source)
    return CallForm("func(x)", source)


def per_call(func: Callable[..., Any], form: CallForm) -> Callable[[Any, int, Any], Any]:
    """``func`` as the batched ``f(x, size, rng)`` returning ``size`` outputs (a list for the
    per-draw forms)."""
    if form.form == _BATCHED[0]:
        return func
    if form.form == _BATCHED[1]:
        return lambda x, size, rng: func(x, size, rng=rng)
    if form.form == "func(x, rng)":
        return lambda x, size, rng: [func(x, rng) for _ in range(size)]
    if form.form == "func(x, rng=rng)":
        return lambda x, size, rng: [func(x, rng=rng) for _ in range(size)]
    return lambda x, size, rng: [func(x) for _ in range(size)]


def _draw(func: Callable[..., Any], x: Any, size: int, form: CallForm, source: Any) -> Outputs:
    try:
        raw = per_call(func, form)(x, size, source)
    except TypeError as exc:
        if form.source != "assumed":
            raise
        raise TypeError(  # the form was a guess: say so, and how to choose another
            f"{_OWNER}: calling {form.form} failed ({exc}); its signature could not be read, "
            "so this form was assumed: wrap the function in a lambda of the form it takes, "
            "for example lambda x: f(x), or pass batched=True for f(x, size, rng)"
        ) from exc
    if form.batched:
        out = to_outputs(raw, size)
        if out.n != size:
            raise ParameterError(
                f"{_OWNER}: the batched `func` returned {out.n} outputs for size={size}"
            )
        return out
    return to_outputs(raw)


@dataclass(frozen=True)
class _Limits:
    """What one audit may spend: a time budget from ``start`` and a memory limit in bytes.

    ``fixed``: the draws were asked for (``samples``), so a run that would need more memory
    is refused instead of shortened.
    """

    start: float
    budget: float
    memory: int
    fixed: bool


def _memory_error(draws: int, per_draw: float, limit: int, basis: str) -> ParameterError:
    return ParameterError(
        f"{_OWNER}: `samples` {draws:,} would need about {draws * per_draw / 2**20:,.0f} MiB "
        f"of memory ({per_draw:,.0f} bytes per draw, {basis}); the limit `max_memory` is "
        f"{limit / 2**20:,.0f} MiB, which allows at most {int(limit // per_draw):,} draws. "
        "Lower `samples` or raise `max_memory` (CLI: --samples, --max-memory)"
    )


def _output_bytes(out: Outputs) -> int:
    return sum(v.nbytes for v in out.real.values()) + sum(v.nbytes for v in out.cat.values())


def _sample(
    func: Callable[..., Any],
    x0: Any,
    x1: Any,
    target: int,
    form: CallForm,
    limits: _Limits,
    analyse: Callable[[Outputs, Outputs], object],
    source: Any,
    progress: bool | None,
) -> tuple[Outputs, Outputs, bool]:
    """Draw up to ``target`` outputs per input in growing batches, within the limits.

    Sampling stops at :data:`_SAMPLING_SHARE` of the time budget, and also where analysing
    the draws (timed once on the first :data:`_PILOT` of them) would not fit in the rest of
    the budget. The outputs of each batch measure the memory a draw needs: past
    ``limits.memory`` a run of fixed size is refused, an open-ended one drawn shorter.
    """
    from tqdm import tqdm

    show = sys.stderr.isatty() if progress is None else bool(progress)
    bar = tqdm(total=target, desc="audit", unit="draw", file=sys.stderr, disable=not show)
    parts0: list[Outputs] = []
    parts1: list[Outputs] = []
    deadline = limits.start + _SAMPLING_SHARE * limits.budget
    end = limits.start + limits.budget
    per_draw = 0.0  # peak bytes per draw, from the outputs seen so far
    analysis: float | None = None  # seconds of analysis per draw, from the pilot
    drawn, batch, limited = 0, (1024 if form.batched else 64), False
    try:
        while drawn < target:
            size = min(batch, target - drawn)
            t0 = _clock()
            parts0.append(_draw(func, x0, size, form, source))
            parts1.append(_draw(func, x1, size, form, source))
            drawn += size
            bar.update(size)
            now = _clock()
            rate = size / max(now - t0, 1e-9)
            out_bytes = _output_bytes(parts0[-1]) + _output_bytes(parts1[-1])
            per_draw = max(per_draw, _MEMORY_FACTOR * out_bytes / size)
            if per_draw * target > limits.memory:
                if limits.fixed:
                    basis = f"measured on the first {drawn:,} draws of each input"
                    raise _memory_error(target, per_draw, limits.memory, basis)
                target = max(drawn, int(limits.memory // per_draw))
            if analysis is None and _PILOT <= drawn < target:
                analysis = _time(analyse, parts0, parts1) / drawn
                now = _clock()
            left = deadline - now
            spare = end - now - _ANALYSIS_SLACK * (analysis or 0.0) * drawn
            if drawn < target and (left <= 0 or spare <= 0):
                limited = True
                break
            batch = int(max(1, min(batch * 4, rate * left * 0.9, 1 << 20)))
            if analysis is not None:  # what the rest of the budget can draw and analyse
                fits = spare / (1 / rate + _ANALYSIS_SLACK * analysis) * 0.9
                batch = int(max(1, min(batch, fits)))
    finally:
        bar.close()
    return Outputs.concat(parts0), Outputs.concat(parts1), limited


def _time(
    analyse: Callable[[Outputs, Outputs], object], parts0: list[Outputs], parts1: list[Outputs]
) -> float:
    """Seconds the analysis takes on the draws so far (its result is dropped)."""
    t0 = _clock()
    analyse(Outputs.concat(parts0), Outputs.concat(parts1))
    return _clock() - t0


def _bound(
    k_fav: int, k_other: int, n: int, delta: float, confidence: float
) -> tuple[float, float]:
    """Clopper-Pearson epsilon lower bound and the plug-in estimate (module docstring)."""
    each = math.sqrt(confidence)  # independent samples: joint coverage each * each
    p_low = binomial_lower(k_fav, n, each)
    p_high = binomial_upper(k_other, n, each)
    lower = math.log((p_low - delta) / p_high) if p_low > delta else 0.0
    p_fav, p_other = k_fav / n, k_other / n
    if p_fav <= delta:
        est = 0.0
    elif p_other == 0:
        est = math.inf
    else:
        est = math.log((p_fav - delta) / p_other)
    return max(lower, 0.0), max(est, 0.0)


def _z(confidence: float) -> float:
    """The normal quantile of ``sqrt(confidence)`` (for the selection score only)."""
    p = 1 - math.sqrt(confidence)
    lo, hi = 0.0, 40.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(mid / math.sqrt(2)) > p:
            lo = mid
        else:
            hi = mid
    return hi


def _evaluate(
    event: Event | None,
    ev0: list[Feature],
    ev1: list[Feature],
    n: int,
    delta: float,
    confidence: float,
) -> tuple[float, float, tuple[int, int]]:
    """Exact bound of the chosen event on the held-out evaluation features."""
    if event is None:
        return 0.0, 0.0, (0, 0)
    k0 = int(np.count_nonzero(event.indicator(ev0)))
    k1 = int(np.count_nonzero(event.indicator(ev1)))
    k_fav, k_other = (k0, k1) if event.favours == 0 else (k1, k0)
    lower, est = _bound(k_fav, k_other, n, delta, confidence)
    return lower, est, (k_fav, k_other)


def _lattice_check(
    all0: Outputs,
    all1: Outputs,
    sel: tuple[list[Feature], list[Feature]],
    ev: tuple[list[Feature], list[Feature]],
    n_ev: int,
    name: str,
    delta: float,
    confidence: float,
    claimed_epsilon: float,
    z: float,
) -> LatticeCheck:
    lows, codes, cells = [], [], []
    for out in (all0, all1):
        vals = out.real.get(name, np.zeros(0))  # a frame's key may be absent from one input
        vals = vals[np.isfinite(vals) & (vals != 0)]
        b, g = lattice_cells(vals)
        lows.append(int(g.min()) if g.size else 0)
        c = b * 65536 + g
        codes.append(c)
        cells.append(np.unique(c))
    shares = [
        float(np.count_nonzero(~np.isin(c, cells[1 - i])) / c.size) if c.size else 0.0
        for i, c in enumerate(codes)
    ]
    only = [[f for f in feats if f.lattice] for feats in (*sel, *ev)]
    _score, event = select_event(only[0], only[1], delta, z)
    lower, _est, _counts = _evaluate(event, only[2], only[3], n_ev, delta, confidence)
    return LatticeCheck(
        lowest_bit=(lows[0], lows[1]),
        exclusive=(shares[0], shares[1]),
        epsilon_lower_bound=lower,
        event=event.description if event else "none",
        consistent=lower <= claimed_epsilon,
    )


def audit(
    func: Callable[..., Any],
    x0: Any,
    x1: Any,
    *,
    claimed: float | PrivacyLoss,
    delta: float = 0,
    confidence: float = 0.95,
    time_budget: float = 60,
    samples: int | None = None,
    max_memory: int = MAX_MEMORY,
    batched: bool | None = None,
    rng: Any = None,
    progress: bool | None = None,
    name: str = "",
) -> AuditResult:
    """Test a randomized function's privacy claim on two neighbouring inputs.

    Draws outputs of ``func`` on ``x0`` and on ``x1``, chooses an event on one half of the
    draws and measures it on the other half, and reports a lower bound on epsilon that holds
    with probability ``confidence``, with the event giving it and a verdict against the claim.

    Parameters
    ----------
    func : callable
        One of three forms, read from its signature without calling it
        (:func:`calling_form`; the result's ``form`` and its text say which):
        ``func(x)`` returning one output from its own randomness (``lambda v:
        mech.release(v)``; the audit's ``rng`` cannot reach it), ``func(x, rng)`` (or
        ``func(x, *, rng)``, as ``lap.release``) returning one output from the audit's bit
        source, or the batched ``func(x, size, rng)`` returning ``size`` outputs (an
        array, or a frame with a ``draw`` column), used when the function has a positional
        parameter named ``size`` or three required ones (or ``batched=True``). ``rng`` is a
        dpkit bit source; pass it to dpkit's releases (for example ``lambda x, size, rng:
        lap.sample(x, size, rng=rng)``). Outputs may be numbers (``None`` or ``NaN`` for a
        refusal), arrays, candidates, :class:`Release` records or DataFrames
        (:mod:`dpkit.audit.features` says what is read from each).
    x0, x1 : any
        Two neighbouring inputs (:mod:`dpkit.audit.neighbours` builds worst-case pairs).
    claimed : float, PureDP, ApproxDP or ZCDP
        The guarantee to test. A float is ``epsilon`` (with ``delta``). A ``ZCDP(rho)`` claim
        is tested as the ``(epsilon, delta)``-DP it implies at the given ``delta``
        (Canonne, Kamath and Steinke 2020, :func:`dpkit.accounting.zcdp_to_approx`).
    delta : float
        The claim's delta, in [0, 1) (taken from an ``ApproxDP`` claim; required > 0 for zCDP).
    confidence : float
        In [0.5, 1) (:data:`MIN_CONFIDENCE`): the probability, over the audit's draws, that
        the reported lower bound holds. A correct mechanism is flagged with probability at
        most ``1 - confidence``, so below 1/2 a violation would be more often wrong than right.
    time_budget : float
        Seconds. Sampling stops at half of it, or sooner where analysing the draws would not
        fit in the rest (the analysis is timed once on the first 4096 draws per input), and
        the result says ``time_limited``; one call of ``func`` is never interrupted.
    samples : int, optional
        Draws per input (>= 20). ``None``: as many as the time budget and ``max_memory``
        allow, at most :data:`DEFAULT_MAX_SAMPLES`.
    max_memory : int
        Bytes (default :data:`MAX_MEMORY`, 4 GiB). ``samples`` whose estimated memory exceeds
        it are refused: before any draw at 192 bytes per draw (what a number output needs:
        the outputs of both inputs, their features and the event search), then at what the
        first batch's outputs measure (a frame or vector output needs several times more).
    batched : bool, optional
        Force the batched (``True``) or a per-draw (``False``) form; without a readable
        signature (a builtin), ``func(x, rng)`` is assumed and the result says so.
    rng
        Seed or bit source for the draws (``None``: secure).
    progress : bool, optional
        Show a progress bar on stderr (default: when stderr is a terminal).
    name : str
        A label for tables.

    Returns
    -------
    AuditResult
        ``epsilon_lower_bound``, ``event``, ``samples``, ``verdict`` and the figures behind
        them, with the floating-point :class:`LatticeCheck` for float outputs.

    Raises
    ------
    TypeError
        ``func`` not callable or taking none of the three forms, bad ``batched``,
        ``samples`` or ``max_memory``.
    ParameterError
        Bad claim, delta, confidence, time budget or sample count; ``samples`` needing more
        memory than ``max_memory``; a batched ``func`` returning the wrong number of outputs.

    Notes
    -----
    *Events.* Outputs are mapped to features (the value, its threshold and histogram-bin
    events, single values of discrete outputs, chosen candidates, refusals, released keys of
    a frame, floating-point lattice cells and residues; :mod:`dpkit.audit.features`). The
    draws of each input are split in halves. On the *selection* half every candidate event
    and direction is scored (:mod:`dpkit.audit.events`) and the best one is kept; on the
    held-out *evaluation* half its frequencies ``k_0 / n`` and ``k_1 / n`` are counted. Since
    the event was fixed before the evaluation half was looked at, no correction for the
    number of candidates is needed.

    *Bound.* With one-sided Clopper-Pearson bounds ``p_0 >= P_0`` and ``p_1 <= P_1`` at
    level ``sqrt(confidence)`` each (the two samples are independent, so both hold with
    probability ``confidence``), any ``(epsilon, delta)``-DP mechanism satisfies
    ``P_0[E] <= e^epsilon P_1[E] + delta``, hence
    ``epsilon >= log((p_0 - delta) / p_1)`` with probability at least ``confidence``.
    The verdict is ``"violation"`` when that exceeds the claim.

    *Floating point.* For float outputs the audit also runs the lattice test: do both
    inputs' outputs reach the same cells (binade and lowest set bit), and the same residues
    modulo the finest power-of-two gap between outputs? A naive floating-point Laplace
    mechanism fails it (Mironov 2012); dpkit's lattice mechanisms pass.

    *What a pass proves, and what it does not.* A violation is evidence, at the stated
    confidence, that the claim is false for this pair of inputs. A pass only says that this
    audit, with these inputs, events and samples, found no violation: events it does not
    try, other inputs, or a violation smaller than the audit's resolution (about
    ``1 / sqrt(samples)`` in the event's probability) can still break the claim. Auditing
    gives lower bounds; privacy proofs give upper bounds. Running many audits at 95%
    confidence, about one correct mechanism in twenty can be flagged by chance.

    References
    ----------
    Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer. Detecting violations of differential
    privacy. CCS 2018.
    A. C. Gilbert, A. McMillan. Property testing for differential privacy. Allerton 2018.
    M. Jagielski, J. Ullman, A. Oprea. Auditing differentially private machine learning:
    how private is private SGD? NeurIPS 2020.
    M. Nasr, S. Song, A. Thakurta, N. Papernot, N. Carlini. Adversary instantiation: lower
    bounds for differentially private machine learning. IEEE S&P 2021.
    W. Kong, A. Munoz Medina, M. Ribero, U. Syed. DP-Auditorium: a large-scale library for
    auditing differential privacy. IEEE S&P 2024 (Google's DP-Auditorium).
    I. Mironov. On significance of the least significant bits for differential privacy.
    CCS 2012.
    C. J. Clopper, E. S. Pearson. The use of confidence or fiducial limits illustrated in
    the case of the binomial. Biometrika 1934.

    Examples
    --------
    >>> import dpkit as dp
    >>> lap = dp.Laplace(epsilon=1.0)
    >>> res = audit(lambda x, size, rng: lap.sample(x, size, rng=rng), 0.0, 1.0,
    ...             claimed=1.0, samples=20_000, rng=1)
    >>> res.verdict, res.epsilon_lower_bound < 1.0
    ('pass', True)
    """
    t_start = _clock()
    if not callable(func):
        raise TypeError(f"{_OWNER}: `func` must be callable; got {type(func).__name__}")
    eps, dlt, claim = _claim(claimed, delta)
    conf = check_number(_OWNER, "confidence", confidence)
    if not MIN_CONFIDENCE <= conf < 1:
        raise ParameterError(
            f"{_OWNER}: `confidence` must be a number in [{MIN_CONFIDENCE}, 1) (the probability "
            "that the lower bound holds: below 1/2 a correct mechanism would be flagged more "
            f"often than not); got {confidence!r}"
        )
    budget = check_positive(_OWNER, "time_budget", time_budget)
    limit = check_int(_OWNER, "max_memory", max_memory, minimum=1)
    floor = _MEMORY_FACTOR * 2 * _MIN_OUTPUT_BYTES
    if samples is None:
        target = min(DEFAULT_MAX_SAMPLES, limit // floor)
    elif isinstance(samples, bool) or not isinstance(samples, int | np.integer):
        raise TypeError(f"{_OWNER}: `samples` must be None or an int; got {samples!r}")
    elif samples < _MIN_SAMPLES:
        raise ParameterError(f"{_OWNER}: `samples` must be >= {_MIN_SAMPLES}; got {samples!r}")
    else:
        target = int(samples)
    if max(target, _MIN_SAMPLES) * floor > limit:  # before any draw
        basis = "at the least, for one number per output"
        raise _memory_error(max(target, _MIN_SAMPLES), floor, limit, basis)
    form = calling_form(func, batched)
    source = as_source(rng)
    limits = _Limits(t_start, budget, limit, samples is not None)

    def analyse(out0: Outputs, out1: Outputs) -> _Analysis:
        return _analyse(out0, out1, dlt, conf, eps)

    out0, out1, limited = _sample(func, x0, x1, target, form, limits, analyse, source, progress)
    n = min(out0.n, out1.n)
    if n < 4:
        raise ParameterError(
            f"{_OWNER}: only {n} draws per input fit in time_budget={time_budget!r} s; "
            "raise the time budget"
        )
    half, event, lower, est, counts, lattice = analyse(out0, out1)
    return AuditResult(
        epsilon_lower_bound=lower,
        event=event.description if event else "none (no event separates the inputs)",
        samples=n,
        verdict="violation" if lower > eps else "pass",
        claimed_epsilon=eps,
        delta=dlt,
        confidence=conf,
        claim=claim,
        counts=counts,
        evaluation_samples=half,
        epsilon_estimate=est,
        favours=event.favours if event else 0,
        lattice=lattice,
        seconds=_clock() - t_start,
        time_limited=limited,
        name=name,
        form=form.form,
        form_source=form.source,
    )


_Analysis = tuple[int, Event | None, float, float, tuple[int, int], LatticeCheck | None]


def _analyse(out0: Outputs, out1: Outputs, dlt: float, conf: float, eps: float) -> _Analysis:
    """Select an event on the first half of the draws and bound it on the second (:func:`audit`
    Notes): ``(half, event, lower bound, estimate, counts, lattice check)``."""
    n = min(out0.n, out1.n)
    half = n // 2
    sel = (out0.take(slice(0, half)), out1.take(slice(0, half)))
    ev = (out0.take(slice(half, 2 * half)), out1.take(slice(half, 2 * half)))
    fz = Featurizer().fit(*sel)
    z = _z(conf)
    fs = (fz.transform(sel[0]), fz.transform(sel[1]))
    fe = (fz.transform(ev[0]), fz.transform(ev[1]))
    _score, event = select_event(fs[0], fs[1], dlt, z)
    lower, est, counts = _evaluate(event, fe[0], fe[1], half, dlt, conf)
    lattice = None
    if fz.floats:
        lattice = _lattice_check(out0, out1, fs, fe, half, fz.floats[0], dlt, conf, eps, z)
    return half, event, lower, est, counts, lattice


def format_table(results: Sequence[AuditResult]) -> str:
    """A fixed-width table: name, claim, lower bound, estimate, event, samples, verdict, time
    (:func:`table_header`, then one :func:`table_row` per result)."""
    return "\n".join([table_header(), *(table_row(r) for r in results)])


_HEAD = (
    f"{'audit':<60} {'claimed eps':>11} {'delta':>8} {'lower bound':>11} {'estimate':>9} "
    f"{'samples':>10} {'verdict':>9} {'time':>7}  event"
)


def table_header() -> str:
    """The two header lines of :func:`format_table` (to print rows as they finish)."""
    return "\n".join([_HEAD, "-" * (len(_HEAD) + 40)])


def table_row(r: AuditResult) -> str:
    """One result as a line of :func:`format_table`."""
    lattice = "" if r.lattice is None or r.lattice.consistent else "  [lattice leak]"
    return (
        f"{r.name[:60]:<60} {r.claimed_epsilon:>11.4g} {r.delta:>8.2g} "
        f"{r.epsilon_lower_bound:>11.4f} {r.epsilon_estimate:>9.4f} {r.samples:>10,} "
        f"{r.verdict:>9} {r.seconds:>6.1f}s  {r.event[:60]}{lattice}"
    )
