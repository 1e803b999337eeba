"""``dpkit budget``: create a durable privacy-budget ledger and inspect it.

Examples::

    dpkit budget init budget.sqlite --epsilon 1 --delta 1e-6
    dpkit budget init replace-one.sqlite --epsilon 1 --relation bounded
    dpkit budget show budget.sqlite
    dpkit budget show budget.sqlite --json
    dpkit budget compose --laplace-scale 10 --count 100 --delta 1e-5
    dpkit budget compose --gaussian-sigma 30 --count 1000 --exponential-epsilon 0.1 --delta 1e-6
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from dpkit.cli._args import check_delta_limit, once_each
from dpkit.errors import ParameterError

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the ``budget`` subcommand and its ``init`` and ``show`` actions."""
    p = sub.add_parser(
        "budget",
        help="create or inspect a privacy-budget ledger (a SQLite file)",
        description="Create a durable privacy-budget ledger, or show its spends and what remains.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    init = actions.add_parser(
        "init",
        help="create a new ledger (never overwrites an existing file)",
        description="Create a new ledger with a budget: --epsilon alone gives pure DP, "
        "--epsilon with --delta gives (epsilon, delta)-DP, --rho gives zCDP.",
    )
    once_each(init)  # an option that takes one value is given at most once
    init.add_argument("file", metavar="FILE", help="the ledger file to create")
    init.add_argument("--epsilon", type=float, default=None, help="epsilon of the budget (> 0)")
    init.add_argument(
        "--delta",
        type=float,
        default=None,
        help="delta of the budget, 0 <= delta <= 1/2 and far below 1/n for n people",
    )
    init.add_argument("--rho", type=float, default=None, help="rho of a zCDP budget (> 0)")
    init.add_argument(
        "--relation",
        choices=("unbounded", "bounded"),
        default="unbounded",
        help="neighbour relation the budget protects: unbounded (add or remove one record, "
        "the default) or bounded (replace one record)",
    )
    init.add_argument(
        "--composition",
        choices=("tight", "basic"),
        default=None,
        help="how spends add up: basic (the spends' epsilons and deltas add, whatever order "
        "the releases are chosen in) or tight (the smallest epsilon of every analysis of what "
        "each release is; under an (epsilon, delta) budget, for releases fixed in advance). "
        "Default: tight for an --epsilon budget without --delta (or delta 0) and for a --rho "
        "budget, where it holds whatever the order; basic for an (epsilon, delta) budget",
    )
    init.set_defaults(func=run_init)

    show = actions.add_parser(
        "show",
        help="print the spends, what remains, and epsilon under each analysis",
        description="Print the spends and what remains, then the recorded releases composed by "
        "every analysis that applies (epsilon at the budget's delta, or at --delta) and the "
        "tightest.",
    )
    once_each(show)
    show.add_argument("file", metavar="FILE", help="an existing ledger file")
    show.add_argument(
        "--json",
        action="store_true",
        help="print JSON (budget, spent, remaining, spends, analyses)",
    )
    show.add_argument(
        "--delta",
        type=float,
        default=None,
        help="the delta to compose the releases at (default: the budget's; required to see "
        "the analyses of a pure or zCDP budget)",
    )
    show.set_defaults(func=run_show)

    comp = actions.add_parser(
        "compose",
        help="what k runs of a mechanism cost, under every analysis",
        description="Compose --count runs of each mechanism given (at least one; several are "
        "composed together) by every analysis that applies, and print epsilon at --delta "
        "under each and the tightest. No ledger is read or written.",
    )
    once_each(comp)
    comp.add_argument(
        "--laplace-scale", type=float, default=None, help="Laplace noise of this scale (> 0)"
    )
    comp.add_argument(
        "--gaussian-sigma",
        type=float,
        default=None,
        help="Gaussian noise of this standard deviation (> 0)",
    )
    comp.add_argument(
        "--sensitivity",
        type=float,
        default=1.0,
        help="the query's sensitivity for --laplace-scale (L1) and --gaussian-sigma (L2); "
        "default 1",
    )
    comp.add_argument(
        "--exponential-epsilon",
        type=float,
        default=None,
        help="the exponential mechanism at this epsilon (a bounded-range selection)",
    )
    comp.add_argument(
        "--count", type=int, default=1, help="how many runs of each mechanism (>= 1; default 1)"
    )
    comp.add_argument("--delta", type=float, required=True, help="the delta, 0 < delta < 1")
    comp.add_argument("--json", action="store_true", help="print JSON")
    comp.set_defaults(func=run_compose)


def _budget_from(args: argparse.Namespace) -> Any:
    from dpkit.accounting import ZCDP, ApproxDP, PureDP

    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise ParameterError(
                "budget init: give either --rho (zCDP) or --epsilon [--delta], not both"
            )
        return ZCDP(args.rho)
    if args.epsilon is None:
        raise ParameterError(
            "budget init: a budget is required: --epsilon E [--delta D] or --rho R"
        )
    if args.delta is None:
        return PureDP(args.epsilon)
    check_delta_limit("budget init", args.delta)
    return ApproxDP(args.epsilon, args.delta)


def run_init(args: argparse.Namespace) -> int:
    """Create the ledger; fails (exit 2) if the file already exists."""
    from dpkit.accounting import Accountant

    budget = _budget_from(args)
    with Accountant.create(
        args.file, budget, relation=args.relation, composition=args.composition
    ) as acct:
        print(
            f"created ledger {args.file} with budget {acct.budget!r} (relation "
            f"{acct.relation!r}, composition {acct.composition!r})"
        )
    return 0


def run_show(args: argparse.Namespace) -> int:
    """Print the table of spends, the total spent and what remains."""
    from dpkit.accounting import Accountant

    delta = args.delta
    if delta is not None:
        check_delta_limit("budget show", delta)
    with Accountant.open(args.file) as acct:
        composed = _composed(acct, delta)
        if args.json:
            out = _as_json(acct)
            out["composition"] = acct.composition
            out["analyses"] = None if composed is None else _composition_json(composed)
            print(json.dumps(out, indent=2))
        else:
            print(acct.summary())
            print()
            if composed is None:
                print(
                    "analyses   give --delta to compose the releases at a delta (the budget "
                    f"{acct.budget!r} has none)"
                )
            else:
                print(_composition_text(composed, f"the {len(acct.history)} spends"))
    return 0


def _composed(acct: Any, delta: float | None) -> Any:
    """The ledger's events composed at ``delta`` (the budget's by default), or ``None``."""
    from dpkit.accounting import ApproxDP

    own = isinstance(acct.budget, ApproxDP) and acct.budget.delta > 0
    if delta is None and not own:
        return None
    return acct.composed(delta=delta)


def _composition_text(c: Any, what: str) -> str:
    lines = [f"{what} composed at delta {c.delta!r}, by analysis:"]
    if not c.by_method:
        lines.append("  (nothing to compose)")
        return "\n".join(lines)
    for method, eps in c.by_method.items():
        mark = "  <- tightest" if method == c.method else ""
        lines.append(f"  {method:<9} epsilon {eps:.6g}{mark}")
    lines.append(f"tightest   epsilon {c.epsilon!r} ({c.method})")
    if c.lower is not None:
        lines.append(f"certified  the true epsilon of these releases is at least {c.lower:.6g}")
    return "\n".join(lines)


def _composition_json(c: Any) -> dict[str, Any]:
    def num(x: float) -> float | str:
        return x if math.isfinite(x) else "inf"

    return {
        "delta": c.delta,
        "epsilon": num(c.epsilon),
        "method": c.method,
        "by_method": {m: num(v) for m, v in c.by_method.items()},
        "lower": c.lower,
    }


def run_compose(args: argparse.Namespace) -> int:
    """Print what ``--count`` runs of the given mechanisms cost, by every analysis."""
    from dpkit.accounting import compose
    from dpkit.accounting import events as ev

    count = args.count
    if count < 1:
        raise ParameterError(f"budget compose: --count must be >= 1; got {count}")
    events: list[Any] = []
    if args.laplace_scale is not None:
        events.append(ev.Laplace(scale=args.laplace_scale, sensitivity=args.sensitivity))
    if args.gaussian_sigma is not None:
        events.append(ev.Gaussian(sigma=args.gaussian_sigma, sensitivity=args.sensitivity))
    if args.exponential_epsilon is not None:
        events.append(ev.Exponential(epsilon=args.exponential_epsilon))
    if not events:
        raise ParameterError(
            "budget compose: give at least one mechanism: --laplace-scale B, --gaussian-sigma "
            "S or --exponential-epsilon E (with --count K and --delta D)"
        )
    if args.delta >= 1 or not args.delta > 0:
        raise ParameterError(f"budget compose: --delta must be in (0, 1); got {args.delta!r}")
    c = compose([(e, count) for e in events], delta=args.delta)
    if args.json:
        out = _composition_json(c)
        out["events"] = [{"event": repr(e), "count": k} for e, k in c.events]
        print(json.dumps(out, indent=2))
    else:
        what = " and ".join(f"{count} x {e!r}" for e in events)
        print(_composition_text(c, what))
    return 0


def _loss_dict(loss: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return {"type": type(loss).__name__, **asdict(loss)}


def _as_json(acct: Any) -> dict[str, Any]:
    return {
        "ledger": str(acct.ledger),
        "budget": _loss_dict(acct.budget),
        "relation": acct.relation,
        "spent": _loss_dict(acct.spent),
        "remaining": _loss_dict(acct.remaining),
        "spends": [
            {
                "index": s.index,
                "timestamp": s.timestamp.isoformat(),
                "label": s.label,
                "relation": s.relation,
                "cost": _loss_dict(s.cost),
                "charge": _loss_dict(s.charge),
            }
            for s in acct.history
        ],
    }
