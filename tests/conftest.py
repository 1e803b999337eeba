"""Shared test helpers, offered as fixtures (tests import only from the public path)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpkit


def _chi2_pvalue(observed_values: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """Chi-square goodness of fit of integer draws against an exact pmf on ``support``.

    Values outside ``support`` and cells with expected count < 5 are pooled into one
    "rest" cell whose expected mass is 1 - sum(pmf of the kept cells).
    """
    from scipy import stats

    n = observed_values.size
    counts = dict(zip(*np.unique(observed_values, return_counts=True), strict=True))
    keep = pmf * n >= 5
    exp_cells = list(pmf[keep] * n)
    obs_cells = [counts.get(v, 0) for v in support[keep]]
    rest_expected = n - sum(exp_cells)
    rest_observed = n - sum(obs_cells)
    if rest_expected >= 5:
        exp_cells.append(rest_expected)
        obs_cells.append(rest_observed)
    elif rest_observed > 0:
        # mass the pmf puts nearly nowhere was observed: pool it with the last cell
        exp_cells[-1] += rest_expected
        obs_cells[-1] += rest_observed
    obs = np.asarray(obs_cells, dtype=float)
    exp = np.asarray(exp_cells, dtype=float)
    stat = float(((obs - exp) ** 2 / exp).sum())
    return float(stats.chi2.sf(stat, df=len(obs) - 1))


#: Bad ``rng`` values with the error (type, message) every release refuses them with, before
#: its accountant is charged; a test naming ``bad_rng`` runs once per value.
_BAD_RNGS = [
    (-1, dpkit.ParameterError, "seed must be >= 0"),
    (np.random.default_rng(0), TypeError, "NumPy generators"),
    ("x", TypeError, "`rng` must be None"),
    (True, TypeError, "a bool is not a seed"),
]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "bad_rng" in metafunc.fixturenames:
        metafunc.parametrize("bad_rng", _BAD_RNGS, ids=["negative", "generator", "str", "bool"])


def _refused_before_the_spend(call: Callable[[object], object], exc: type, match: str) -> None:
    """``call(accountant)`` raises ``exc`` (message matching ``match``) and the accountant
    was charged nothing."""
    acct = dpkit.Accountant(dpkit.PureDP(10.0))
    with pytest.raises(exc, match=match):
        call(acct)
    assert len(acct.history) == 0 and acct.spent == dpkit.PureDP(0.0)


@pytest.fixture
def refused_before_the_spend() -> Callable[[Callable[[object], object], type, str], None]:
    return _refused_before_the_spend


def _refused_or_released_once(make_and_call: Callable[[object], object]) -> None:
    """``make_and_call(accountant)`` is refused (``ParameterError``) before the accountant is
    charged, or releases finite values and is charged once."""
    acct = dpkit.Accountant(dpkit.ApproxDP(1e6, 0.5), relation="bounded")
    try:
        out = make_and_call(acct)
    except dpkit.ParameterError:
        assert acct.history == ()  # refused before the spend
    else:
        assert np.all(np.isfinite(np.asarray(out, dtype=float)))
        assert len(acct.history) == 1


@pytest.fixture
def refused_or_released_once() -> Callable[[Callable[[object], object]], None]:
    return _refused_or_released_once


#: Debian's chromium, driven by Playwright with ``executable_path``: no browser is downloaded.
CHROMIUM = os.environ.get("DPKIT_CHROMIUM", "/usr/bin/chromium")
#: Set by ``make docs-test``: a missing Playwright, Chromium or built site fails, not skips.
BROWSER_REQUIRED = os.environ.get("DPKIT_DOCS_BROWSER") == "1"
_CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def _skip_or_fail(reason: str) -> None:
    """Skip with ``reason``; fail instead under ``make docs-test``."""
    if BROWSER_REQUIRED:
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def skip_or_fail() -> Callable[[str], None]:
    return _skip_or_fail


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Chromium (skips without Playwright or Chromium; see BROWSER_REQUIRED)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("Playwright is not installed (make docs-test installs the docs extra)")
    if not Path(CHROMIUM).exists():
        _skip_or_fail(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=_CHROMIUM_FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def chi2_pvalue() -> Callable[[np.ndarray, np.ndarray, np.ndarray], float]:
    return _chi2_pvalue


class ScriptedSource:
    """A BitSource that replays given words first, then falls back to a seeded source."""

    secure = False

    def __init__(self, words: list[int], seed: int = 0) -> None:
        from dpkit.samplers import SeededSource

        self._script = list(words)
        self._rest = SeededSource(seed)
        self.drawn = 0

    def words(self, n: int) -> np.ndarray:
        self.drawn += n
        take = self._script[:n]
        self._script = self._script[n:]
        out = np.empty(n, dtype=np.uint64)
        out[: len(take)] = np.array(take, dtype=np.uint64)
        if n > len(take):
            out[len(take) :] = self._rest.words(n - len(take))
        return out


@pytest.fixture
def scripted_source() -> type:
    from dpkit.samplers import BitSource

    return type("Scripted", (ScriptedSource, BitSource), {})


# --------------------------------------------------------------------------------- Spark
#: the driver may receive at most this much from one Spark action in the test run: far more
#: than any aggregate the tests collect, far less than the raw rows of the larger tables, so a
#: query that collected raw rows fails loudly instead of passing slowly
SPARK_MAX_RESULT = "8m"


def spark_unavailable() -> str | None:
    """Why Spark cannot run here (pyspark or Java missing), or None."""
    from dpkit.errors import MissingDependencyError
    from dpkit.session.engines.spark import find_java, require_pyspark

    try:
        require_pyspark("the Spark tests")
        find_java()
    except MissingDependencyError as err:
        return str(err)
    return None


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """The one local Spark of the test run (local[2], 127.0.0.1, no UI, quiet, quick start);
    skips with the reason when pyspark or Java is missing."""
    reason = spark_unavailable()
    if reason is not None:
        pytest.skip(f"Spark tests skipped: {reason}")
    from dpkit.session.engines.spark import local_session

    session = local_session(
        cores=2,
        shuffle_partitions=2,
        app_name="dpkit-tests",
        quick_start=True,
        conf={"spark.driver.maxResultSize": SPARK_MAX_RESULT},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def to_spark(spark):  # type: ignore[no-untyped-def]
    """``to_spark(df)``: a Polars DataFrame as a Spark DataFrame (through Arrow)."""
    import polars as pl

    def convert(df: pl.DataFrame):  # type: ignore[no-untyped-def]
        return spark.createDataFrame(df.to_arrow(compat_level=pl.CompatLevel.oldest()))

    return convert
