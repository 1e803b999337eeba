"""Demo section: sensitivity on the seed's universe and on Adult's Age."""

from __future__ import annotations

from typing import Any

TITLE = "Sensitivity: global, local and smooth, bounded and unbounded"

UNIVERSE = (1, 2, 3, 10, 11)
QUERIES = ("count", "sum", "mean", "median", "var", "std")


def run(ctx: Any) -> None:
    from dpkit import sensitivity as sens

    echo = ctx.echo
    rows = sens.sweep(QUERIES, UNIVERSE, size=3, distances=(1, 2, 3))
    echo("Global sensitivity, datasets of 3 records from the universe {1, 2, 3, 10, 11}")
    echo("(brute force over every dataset; k = Hamming distance):")
    echo(f"  {'query':<8} {'relation':<10} {'k=1':>9} {'k=2':>9} {'k=3':>9}")
    cells: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        cells.setdefault((r.query, r.relation), []).append(r.sensitivity)
    for (name, rel), vals in cells.items():
        echo(f"  {name:<8} {rel:<10}" + "".join(f"{v:>9.4g}" for v in vals))

    ages = ctx.adult["Age"].to_numpy()
    bounds = (0.0, 100.0)
    echo("")
    echo(f"Adult's Age ({ages.size:,} people, bounds {bounds}): local vs global sensitivity")
    echo(f"  {'query':<8} {'relation':<10} {'local':>12} {'global':>12}   smooth, beta 0.1")
    for name in ("median", "mean", "var", "std"):
        for rel in ("bounded", "unbounded"):
            ls = sens.local(name, ages, relation=rel, bounds=bounds)
            g = sens.global_sensitivity(name, bounds=bounds, relation=rel, n=ages.size)
            gs = f"{g:>12.5g}"
            sm = sens.smooth(name, ages, beta=0.1, relation=rel, bounds=bounds)
            echo(f"  {name:<8} {rel:<10} {ls:>12.5g} {gs} {sm.sensitivity:>10.4g} (k={sm.k})")
    echo("  The median of 32,561 ages has local sensitivity 0 (the middle ages repeat), yet")
    echo("  releasing it with noise scaled to 0 would not be private: smooth sensitivity and")
    echo("  propose-test-release account for how far the data is from a sensitive dataset.")

    _figures(ctx, rows)


def _figures(ctx: Any, rows: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpkit.plot import median_neighbours, sensitivity_by_distance

    fig, ax = plt.subplots(figsize=(9, 5))
    sensitivity_by_distance(rows=rows, ax=ax)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylim(bottom=0)
    fig.tight_layout()
    path = ctx.out / "sensitivity_by_distance.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    ctx.echo(f"  figure: {path}")

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    median_neighbours([1, 2, 10], UNIVERSE, relation="bounded", ax=axes[0])
    median_neighbours([1, 2, 10], UNIVERSE, relation="unbounded", ax=axes[1])
    fig.tight_layout()
    path = ctx.out / "median_neighbours.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    ctx.echo(f"  figure: {path}")
