"""The noise core: every noisy figure dpkit releases is calibrated and drawn here.

Mechanisms, frameworks, statistics and the Session all turn a sensitivity and a privacy
parameter into noise through this package, and draw it through the exact samplers of
:mod:`dpkit.samplers`:

* :mod:`dpkit.noise.laws`: the discrete Laplace and discrete Gaussian laws on the
  integers: draws, tails, tail quantiles, interval half-widths, key-selection thresholds;
* :mod:`dpkit.noise.calibration`: sensitivity and epsilon (or rho) to a law on a
  power-of-two lattice (:func:`laplace_law`, :func:`laplace_lattice`, :class:`Noise`);
* :mod:`dpkit.noise.gaussian_calibration`: the discrete Gaussian at ``(epsilon, delta)``:
  the continuous sigmas, the exact discrete delta, the lattice variance a release draws;
* :mod:`dpkit.noise.lattice`: real values rounded to their lattice and released with noise
  added block by block (the mechanisms' vectorised path);
* :mod:`dpkit.noise.grid`: noise on a power-of-two output grid of floats (the frameworks).

These are dpkit's internal interfaces between layers: users release through
:mod:`dpkit.mechanisms`, the frameworks, :mod:`dpkit.statistics` and the Session.
"""

from dpkit.noise.calibration import (
    MAX_GRID,
    MIN_GRID,
    Noise,
    check_laplace_scale,
    laplace_grid,
    laplace_lattice,
    laplace_law,
    laplace_steps,
    lattice_grid,
    pow2_at_most,
)
from dpkit.noise.lattice import MAX_LATTICE, LatticeValues
from dpkit.noise.laws import (
    MAX_GAUSSIAN_VARIANCE,
    MAX_LAPLACE_SCALE,
    DiscreteGaussianLaw,
    DiscreteLaplaceLaw,
    Law,
    below_step_note,
    gaussian_tail,
    laplace_tail,
    law,
    threshold,
)

__all__ = [
    "MAX_GAUSSIAN_VARIANCE",
    "MAX_GRID",
    "MAX_LAPLACE_SCALE",
    "MAX_LATTICE",
    "MIN_GRID",
    "DiscreteGaussianLaw",
    "DiscreteLaplaceLaw",
    "LatticeValues",
    "Law",
    "Noise",
    "below_step_note",
    "check_laplace_scale",
    "gaussian_tail",
    "laplace_grid",
    "laplace_lattice",
    "laplace_law",
    "laplace_steps",
    "laplace_tail",
    "lattice_grid",
    "law",
    "pow2_at_most",
    "threshold",
]
