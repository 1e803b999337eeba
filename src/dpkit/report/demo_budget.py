"""Demo section: a privacy budget spent by real releases, and a query it refuses."""

from __future__ import annotations

from typing import Any

import numpy as np

TITLE = "Privacy budgets: an accountant that cannot be overspent"

_LEDGER = "budget-demo.sqlite"


def run(ctx: Any) -> None:
    from dpkit import (
        ZCDP,
        Accountant,
        BudgetExceededError,
        PureDP,
        advanced_composition,
        pure_to_zcdp,
        sequential_composition,
        zcdp_to_approx,
    )
    from dpkit.mechanisms import Laplace

    echo = ctx.echo
    ages = ctx.adult["Age"].to_numpy()

    # A fresh ledger for this run: the demo's own output file, never a user's ledger.
    path = ctx.out / _LEDGER
    for suffix in ("", "-wal", "-shm"):
        (ctx.out / f"{_LEDGER}{suffix}").unlink(missing_ok=True)
    acct = Accountant(PureDP(1.0), ledger=path)
    echo(f"Budget PureDP(epsilon=1.0), every spend committed to {path.name} before noise is drawn.")
    echo("")

    # 1. three releases that fit
    left = []
    count = Laplace(epsilon=0.25, sensitivity=1.0).release(
        len(ages), rng=ctx.rng(501), accountant=acct.labelled("count of adults")
    )
    left.append(acct.remaining)
    clipped = np.clip(ages, 0, 100)  # bounds chosen without looking at the data
    total = Laplace(epsilon=0.25, sensitivity=100.0).release(
        float(clipped.sum()), rng=ctx.rng(502), accountant=acct.labelled("sum of ages in [0, 100]")
    )
    left.append(acct.remaining)
    decades = np.bincount(ages // 10, minlength=10)[1:10]  # 10-19, ..., 90-99
    # one person is in one bin: L1 sensitivity 1 for the whole histogram (parallel composition)
    hist = Laplace(epsilon=0.25, sensitivity=1.0).release(
        decades.astype(float), rng=ctx.rng(503), accountant=acct.labelled("age histogram")
    )
    left.append(acct.remaining)
    echo(f"  {'release (epsilon 0.25 each)':<28} {'true':>12} {'noisy':>12}   remaining after")
    echo(f"  {'':<28} {'(non-private)':>12} {'(released)':>12}")
    rows = [
        ("count of adults", float(len(ages)), count),
        ("mean age (sum / count)", float(clipped.sum() / len(ages)), total / count),
        ("people in their 40s", float(decades[3]), float(hist[3])),
    ]
    for (name, true, noisy), rest in zip(rows, left, strict=True):
        echo(f"  {name:<28} {true:>14,.2f} {noisy:>12,.2f}   {rest}")

    # 2. a query that would overspend is refused before any noise is drawn
    echo("")
    over = Laplace(epsilon=0.5, sensitivity=1.0)
    try:
        over.release(int((ages >= 40).sum()), rng=ctx.rng(504), accountant=acct.labelled("40+"))
    except BudgetExceededError as err:
        echo("Asking for a count of people aged 40+ at epsilon 0.5:")
        echo(
            f"  refused: BudgetExceededError, remaining {err.remaining}, requested {err.requested}"
        )
        echo("  nothing was recorded and no noise was drawn, so nothing was released")
    smaller = Laplace(epsilon=0.25, sensitivity=1.0).release(
        int((ages >= 40).sum()), rng=ctx.rng(505), accountant=acct.labelled("count aged 40+")
    )
    true_40 = int((ages >= 40).sum())
    echo(f"The same count at epsilon 0.25 fits: {smaller:,.1f} (true, non-private: {true_40:,})")

    # 3. the ledger, as `dpkit budget show` prints it
    echo("")
    echo(f"$ dpkit budget show {path.name}")
    for line in acct.summary().splitlines():
        echo(f"  {line}".rstrip())
    acct.close()

    # 4. exact arithmetic: the float 0.1 is slightly more than 1/10
    echo("")
    tenths = Accountant(PureDP(1.0))
    refused = 0
    for i in range(10):
        try:
            tenths.spend(PureDP(0.1), label=f"q{i}")
        except BudgetExceededError:
            refused += 1
    echo(
        f"Ten spends of PureDP(0.1) against PureDP(1.0): {10 - refused} accepted, "
        f"{refused} refused."
    )
    echo("  The float 0.1 is 0.1000000000000000055..., so ten of them add up to more than 1;")
    echo("  the accountant adds exact rationals and refuses the tenth rather than creep past.")
    echo(f"  What is left, {tenths.remaining}, can still be spent exactly.")

    # 5. what 100 small releases cost under each composition theorem
    echo("")
    echo("100 releases at epsilon 0.01 each, composed three ways:")
    basic = sequential_composition([PureDP(0.01)] * 100)
    adv = advanced_composition(PureDP(0.01), 100, delta_prime=1e-6)
    rho = sequential_composition([pure_to_zcdp(0.01)] * 100)
    assert isinstance(rho, ZCDP)
    via_zcdp = zcdp_to_approx(rho, 1e-6)
    assert isinstance(basic, PureDP)
    echo(f"  basic composition (Dwork-Roth 3.16)    epsilon {basic.epsilon:.4f}")
    echo(f"  advanced composition (DRV 2010)        epsilon {adv.epsilon:.4f}, delta {adv.delta:g}")
    echo(
        f"  zCDP, rho {rho.rho:.3g}, converted (CKS 2020)  epsilon {via_zcdp.epsilon:.4f}, "
        f"delta {via_zcdp.delta:g}"
    )

    # 6. the same budget under tight accounting: what each release is, composed tightly
    _tight_section(ctx)


def _tight_section(ctx: Any) -> None:
    """How many equal Laplace counts one budget fits under basic and under tight accounting,
    each found by spending until the accountant refuses."""
    from dpkit import Accountant, ApproxDP, BudgetExceededError, approx_to_zcdp
    from dpkit.mechanisms import Laplace

    echo = ctx.echo
    budget = ApproxDP(1.0, 1e-6)
    as_rho = approx_to_zcdp(budget.epsilon, budget.delta)  # the largest rho that converts within
    lap = Laplace(epsilon=2.0**-7, sensitivity=1.0)  # 1/128: the basic sum is exact
    fits = {}
    accountants = {
        "basic": Accountant(budget, composition="basic"),
        "zcdp": Accountant(as_rho),  # tight by default: the rhos add
        "tight": Accountant(budget, composition="tight"),
    }
    for mode, acct in accountants.items():
        n = 0
        while True:
            try:
                lap.release(100.0, rng=ctx.rng(600 + n), accountant=acct)
            except BudgetExceededError:
                break
            n += 1
        fits[mode] = n
    c = accountants["tight"].composed()
    echo("")
    echo(f"One budget, {budget}, spent on counts by the Laplace mechanism at epsilon 1/128:")
    echo(f"  composition='basic' (epsilons add)   fits {fits['basic']} releases")
    echo(f"  the same as a zCDP budget, {as_rho} (rhos add), fits {fits['zcdp']} releases")
    echo(
        f"  composition='tight' (fixed workload) fits {fits['tight']} releases: their "
        f"privacy-loss distributions composed give epsilon {c.epsilon:.4f} at delta 1e-6"
    )
    others = ", ".join(f"{m} {v:.3f}" for m, v in c.by_method.items() if m != c.method)
    tight = f"{c.method} {c.epsilon:.3f}"
    echo(f"  the {fits['tight']} releases under each analysis: {tight}, {others}")
    echo(
        "  basic and zCDP hold whatever order the releases are chosen in; tight, for releases "
        "fixed in advance"
    )
