"""Demo section: sensitivity on a toy universe and on Adult's Age."""

from __future__ import annotations

from typing import Any

TITLE = "Sensitivity: global, local and smooth, bounded and unbounded"

UNIVERSE = (1, 2, 3, 10, 11)
QUERIES = ("count", "sum", "mean", "median", "var", "std")
TOY = "toy universe {1, 2, 3, 10, 11}"


def table_line(cells: list[tuple[str, int]]) -> str:
    """One line of a fixed-width table: ``(text, width)`` cells, negative width = left-aligned.

    Header and rows go through this one function, so their columns cannot drift apart.
    """
    out = []
    for text, width in cells:
        out.append(f"{text:<{-width}}" if width < 0 else f"{text:>{width}}")
    return "  " + " ".join(out)


def run(ctx: Any) -> None:
    from dpkit import sensitivity as sens

    echo = ctx.echo
    ks = (1, 2, 3)
    rows = sens.sweep(QUERIES, UNIVERSE, size=3, distances=ks)
    echo(f"Global sensitivity on a {TOY}: every dataset of 3 records drawn from it")
    echo("(brute force; k = Hamming distance; bounded = replace one record, unbounded =")
    echo("add/remove one record):")
    echo(table_line([("query", -8), ("relation", -10)] + [(f"k={k}", 9) for k in ks]))
    cells: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        cells.setdefault((r.query, r.relation), []).append(r.sensitivity)
    for (name, rel), vals in cells.items():
        echo(table_line([(name, -8), (rel, -10)] + [(f"{v:.4g}", 9) for v in vals]))
    _toy_figures(ctx, rows)

    ages = ctx.adult["Age"].to_numpy()
    bounds = (0.0, 100.0)
    echo("")
    echo(f"Adult's Age ({ages.size:,} people, bounds [0, 100]): local vs global sensitivity")
    widths = [-8, -10, 12, 12, 18, 6]
    head = ["query", "relation", "local", "global", "smooth (beta 0.1)", "at k"]
    echo(table_line(list(zip(head, widths, strict=True))))
    for name in ("median", "mean", "var", "std"):
        for rel in ("bounded", "unbounded"):
            ls = sens.local(name, ages, relation=rel, bounds=bounds)
            g = sens.global_sensitivity(name, bounds=bounds, relation=rel, n=ages.size)
            sm = sens.smooth(name, ages, beta=0.1, relation=rel, bounds=bounds)
            texts = [name, rel, f"{ls:.5g}", f"{g:.5g}", f"{sm.sensitivity:.4g}", str(sm.k)]
            echo(table_line(list(zip(texts, widths, strict=True))))
    g_bounded = sens.global_sensitivity("median", bounds=bounds, relation="bounded", n=ages.size)
    g_unbounded = sens.global_sensitivity("median", bounds=bounds, relation="unbounded")
    echo(f"  The median's global sensitivity is {g_bounded:g} under replace-one (bounded, n odd)")
    echo(
        f"  and {g_unbounded:g} under add/remove (unbounded): the framework comparison below "
        f"uses {g_unbounded:g}."
    )
    echo("  The median of 32,561 ages has local sensitivity 0 (the middle ages repeat), yet")
    echo("  releasing it with noise scaled to 0 would not be private: smooth sensitivity and")
    echo("  propose-test-release account for how far the data is from a sensitive dataset.")


def _toy_figures(ctx: Any, rows: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpkit.plot import median_neighbours, sensitivity_by_distance

    fig, ax = plt.subplots(figsize=(9, 5))
    sensitivity_by_distance(rows=rows, ax=ax)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylim(bottom=0)
    ax.set_title(
        f"Global sensitivity on the {TOY}, datasets of 3 records\n"
        "(solid: bounded, dashed: unbounded)"
    )
    fig.tight_layout()
    path = ctx.out / "sensitivity_by_distance.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    ctx.echo(f"  figure of this table (the toy universe): {path}")

    fig, axes = plt.subplots(1, 2, figsize=(15, 4.8))  # each legend right of its axes
    median_neighbours([1, 2, 10], UNIVERSE, relation="bounded", ax=axes[0])
    median_neighbours([1, 2, 10], UNIVERSE, relation="unbounded", ax=axes[1])
    fig.suptitle(f"The median of {{1, 2, 10}} on each neighbour, records from the {TOY}")
    fig.tight_layout()
    path = ctx.out / "median_neighbours.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    ctx.echo(f"  figure, the median's neighbours in the toy universe: {path}")
