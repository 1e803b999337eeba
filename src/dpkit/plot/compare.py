"""The figure of a comparison, also importable as ``dpkit.plot.compare``.

The module is :mod:`dpkit.plot.comparison` (:func:`plot_comparison`, the figure of
:func:`dpkit.compare.compare`); ``dpkit.plot.compare is dpkit.plot.comparison``.
"""

import sys

from dpkit.plot import comparison as _comparison

sys.modules[__name__] = _comparison  # one module under both names
