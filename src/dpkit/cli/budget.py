"""``dpkit budget``: create a durable privacy-budget ledger and inspect it.

Examples::

    dpkit budget init budget.sqlite --epsilon 1 --delta 1e-6
    dpkit budget init replace-one.sqlite --epsilon 1 --relation bounded
    dpkit budget show budget.sqlite
    dpkit budget show budget.sqlite --json
"""

from __future__ import annotations

import argparse
import json
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
        default="tight",
        help="how spends add up: tight (the default: the smallest epsilon of every analysis "
        "of what each release is) or basic (the spends' epsilons and deltas add)",
    )
    init.set_defaults(func=run_init)

    show = actions.add_parser("show", help="print the spends and what remains")
    show.add_argument("file", metavar="FILE", help="an existing ledger file")
    show.add_argument(
        "--json", action="store_true", help="print JSON (budget, spent, remaining, spends)"
    )
    show.set_defaults(func=run_show)


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

    with Accountant.open(args.file) as acct:
        if args.json:
            print(json.dumps(_as_json(acct), indent=2))
        else:
            print(acct.summary())
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
