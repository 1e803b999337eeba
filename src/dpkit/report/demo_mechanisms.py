"""Demo section: the textbook mechanisms on the Adult data."""

from __future__ import annotations

from typing import Any

import numpy as np

TITLE = "Mechanisms: Laplace, Gaussian and the exponential mechanism"


def run(ctx: Any) -> None:
    from dpkit.mechanisms import Exponential, Gaussian, Laplace

    echo = ctx.echo
    ages = ctx.adult["Age"].to_numpy()

    # 1. a noisy count of people aged 40 or more
    true_count = int((ages >= 40).sum())
    lap = Laplace(epsilon=0.1, sensitivity=1.0)
    rel = lap.measure(true_count, alpha=0.05, rng=ctx.rng(1))
    assert rel.interval is not None  # a scalar release always carries its interval
    _, hi = rel.interval
    echo("People aged 40 or more (Laplace, sensitivity 1, epsilon 0.1):")
    echo(f"  true count   {true_count:>12,d}   (non-private, shown to compare)")
    echo(f"  noisy count  {rel.value:>12,.2f}   95% of releases within +/-{hi - rel.value:.1f}")
    echo(f"  noise scale  {rel.scale:.4f} (nominal b = {lap.scale:g}); privacy {lap.privacy}")

    # 2. Laplace versus Gaussian noise, 100,000 draws each, as a histogram
    n = 100_000
    lap1 = Laplace(epsilon=1.0, sensitivity=1.0)
    gau1 = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    lap_noise = lap1.noise(n, rng=ctx.rng(2))
    gau_noise = gau1.noise(n, rng=ctx.rng(3))
    echo("")
    echo("Noise of 100,000 scalar releases (epsilon 1, sensitivity 1; Gaussian delta 1e-5):")
    echo(f"  {'mechanism':<10} {'scale':>8} {'std':>8} {'95% half-width':>16}")
    for name, mech, noise in (("Laplace", lap1, lap_noise), ("Gaussian", gau1, gau_noise)):
        scale = mech.noise_scale()
        half = float(np.quantile(np.abs(noise), 0.95))
        echo(f"  {name:<10} {scale:>8.3f} {noise.std():>8.3f} {half:>16.3f}")
    path = ctx.out / "laplace_vs_gaussian.png"
    _histogram(path, lap_noise, gau_noise)
    echo(f"  histogram: {path}")

    # 3. the exponential mechanism picks the most common marital status
    counts = ctx.adult["Marital Status"].value_counts(sort=True)
    names = counts["Marital Status"].to_list()
    scores = counts["count"].to_numpy()
    exp = Exponential(epsilon=1.0, sensitivity=1.0)
    choice = exp.select(names, scores, rng=ctx.rng(4))
    echo("")
    echo("Most common marital status (exponential mechanism, utility = count, epsilon 1):")
    echo(f"  {'marital status':<24} {'true count':>10}   (non-private: the mechanism's input)")
    for name, score in zip(names, scores, strict=True):
        echo(f"  {name:<24} {int(score):>10,d}")
    echo(f"  selected: {choice}")


def _histogram(path: Any, lap_noise: np.ndarray, gau_noise: np.ndarray) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    bins = np.linspace(-15, 15, 121).tolist()
    ax.hist(lap_noise, bins=bins, alpha=0.6, label="Laplace (epsilon 1)", density=True)
    ax.hist(gau_noise, bins=bins, alpha=0.6, label="Gaussian (epsilon 1, delta 1e-5)", density=True)
    ax.set_xlabel("noise added to the true answer")
    ax.set_ylabel("density")
    ax.set_title("100,000 draws of exact discrete noise on a fine grid")
    ax.legend(loc="upper right")  # both densities peak at 0 and are low at the edges
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
