"""Seeded releases equal values recorded before the engine path was optimised.

The values below were released by the Session at commit 20780b1 (before the single-pass
aggregation and Polars' streaming engine) with the same data, queries and seeds. The
released values depend on the engine only through the exact per-group integers (lattice
sums, counts, grid counts), so any change in how the engine computes them, a different lattice
map, a lost or extra row, a NaN or null handled differently, shows here as a different
release. The per-person bounding uses each engine's own salted hash, so the ``unit`` query
has its own recorded values per hash family (Polars for Polars, PyArrow, CSV and Parquet;
pandas; DuckDB; Spark).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import dpkit as dp


def _table(n: int = 800, seed: int = 4) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-20, 120, n)  # clipped at both bounds
    w = rng.normal(50, 30, n)
    w[::53] = np.nan
    df = pl.DataFrame(
        {
            "pid": rng.integers(0, 150, n),
            "g": rng.choice(["a", "b", "c", "d"], n),
            "x": x,
            "w": w,
            "k": rng.integers(-5, 40, n),
        }
    ).with_columns(
        pl.when(pl.int_range(n) % 61 == 0).then(None).otherwise(pl.col("w")).alias("w"),
        pl.when(pl.int_range(n) % 71 == 0).then(None).otherwise(pl.col("k")).alias("k"),
    )
    v = rng.normal(50, 30, n)
    v[500::37] = np.nan  # NaN, no null, only in the table's second half
    y = rng.uniform(-20, 120, n)
    z = y.copy()
    # outside (-20, 120) by 3/4 of the lattice unit of these bounds (2**-13), late in the
    # table: the clip moves them by a whole unit
    y[700], z[650] = 120 + 3 * 2**-15, -20 - 3 * 2**-15
    f = 1e15 + rng.uniform(0, 1.6, n)  # units near 2**52 on the bounds (1e15 + 0.3, 1e15 + 1.3)
    return df.with_columns(v=v, y=y, z=z, f=f)


_Query = tuple[dict[str, Any], Callable[[dp.Session], Any], dict[str, Any]]

QUERIES: dict[str, _Query] = {
    # clean, NaN-and-null and integer-with-null columns in one pass, no groups
    "total": (
        {},
        lambda s: s.query().agg(
            dp.count(),
            dp.mean("x", bounds=(0, 100)),
            dp.sum("w", bounds=(-10, 90)),
            dp.var("k", bounds=(0, 30)),
            dp.std("x", bounds=(0, 100), name="sx"),
        ),
        {"epsilon": 5.0},
    ),
    # a filter, public keys with an empty group
    "keys": (
        {},
        lambda s: (
            s.query()
            .filter(nw.col("k") >= 0)
            .group_by("g", keys=["a", "b", "c", "e"])
            .agg(
                dp.count(),
                dp.mean("w", bounds=(0, 100)),
                dp.sum("x", bounds=(0, 100)),
                dp.mean("k", bounds=(0, 40), name="mk"),
            )
        ),
        {"epsilon": 8.0},
    ),
    # private keys, Gaussian noise, bounds at a large offset (the float-sum attack's)
    "gauss": (
        {},
        lambda s: (
            s.query()
            .group_by("g")
            .agg(
                dp.count(),
                dp.mean("x", bounds=(1e15, 1e15 + 1), name="big"),
                dp.sum("w", bounds=(-50, 150)),
            )
        ),
        {"epsilon": 4.0, "delta": 1e-6},
    ),
    # per-person bounding (rows and groups)
    "unit": (
        {"privacy_unit": "pid", "max_rows_per_unit": 3, "max_groups_per_unit": 2},
        lambda s: (
            s.query()
            .group_by("g", keys=["a", "b", "c", "d"])
            .agg(dp.count(), dp.mean("x", bounds=(0, 100)), dp.var("w", bounds=(0, 100)))
        ),
        {"epsilon": 6.0},
    ),
    # grid counts (quantiles)
    "median": (
        {},
        lambda s: (
            s.query()
            .group_by("g", keys=["a", "b", "c", "d"])
            .agg(dp.count(), dp.median("x", bounds=(0, 100)))
        ),
        {"epsilon": 6.0},
    ),
    # every value inside the bounds (the clip changes nothing), float and integer, grouped
    "inside": (
        {},
        lambda s: (
            s.query()
            .group_by("g", keys=["a", "b", "c", "d"])
            .agg(
                dp.mean("x", bounds=(-20, 120)),
                dp.var("x", bounds=(-32, 128), name="vx"),
                dp.sum("pid", bounds=(0, 150)),
                dp.sum("k", bounds=(-5, 40)),
            )
        ),
        {"epsilon": 6.0},
    ),
    # a NaN-only column; values a hair outside the bounds (clipped by less than a unit)
    "edge": (
        {},
        lambda s: (
            s.query()
            .group_by("g", keys=["a", "b", "c", "d"])
            .agg(
                dp.mean("v", bounds=(0, 100)),
                dp.mean("y", bounds=(-20, 120)),
                dp.sum("z", bounds=(-20, 120)),
                # units near 2**52: their float64 sums are exact only once centred
                dp.mean("f", bounds=(1e15 + 0.3, 1e15 + 1.3)),
            )
        ),
        {"epsilon": 6.0},
    ),
    # zCDP, a fill value
    "zcdp": (
        {},
        lambda s: s.query().agg(
            dp.mean("w", bounds=(0, 100), fill=25.0), dp.sum("k", bounds=(0, 40))
        ),
        {"rho": 2.0},
    ),
}

# Recorded at 20780b1 (see the module docstring); floats as repr, exact.
SHARED: dict[str, dict[str, list[Any]]] = {
    "total": {
        "count": [799],
        "count_low": [796],
        "count_high": [802],
        "x_mean": [52.50949511962586],
        "x_mean_low": [52.0956650722174],
        "x_mean_high": [52.93273039538451],
        "w_sum": [38296.25860595703],
        "w_sum_low": [38026.64270019531],
        "w_sum_high": [38565.87451171875],
        "k_var": [118.52383232360904],
        "k_var_low": [112.3952079303012],
        "k_var_high": [124.6598056838099],
        "sx": [36.14439163369038],
        "sx_low": [35.2775346925775],
        "sx_high": [36.99530038053084],
    },
    "keys": {
        "g": ["a", "b", "c", "e"],
        "count": [178, 170, 183, 0],
        "count_low": [177, 169, 182, -1],
        "count_high": [179, 171, 184, 1],
        "w_mean": [50.7068073361419, 50.34074152166193, 51.82461890745699, 35.59686279296875],
        "w_mean_low": [49.793228512718564, 49.37834707698467, 50.92567963652559, 0.0],
        "w_mean_high": [51.654043651762464, 51.32006722207395, 52.76488871958064, 100.0],
        "x_sum": [9911.071594238281, 8949.043334960938, 9217.601623535156, -65.786376953125],
        "x_sum_low": [9761.284973144531, 8799.256713867188, 9067.815002441406, -215.572998046875],
        "x_sum_high": [10060.858215332031, 9098.829956054688, 9367.388244628906, 84.000244140625],
        "mk": [19.48591749403212, 18.409268188476563, 19.941508642311305, 15.225941975911457],
        "mk_low": [19.118987343528055, 17.994290455278144, 19.5909089669169, 0.0],
        "mk_high": [19.836894159731656, 18.805166485665858, 20.289494178814596, 40.0],
    },
    "gauss": {
        "g": ["a", "b", "c", "d"],
        "count": [202, 197, 203, 194],
        "count_low": [197, 192, 198, 189],
        "count_high": [207, 202, 208, 199],
        "big": [1000000000000000.0, 1000000000000000.0, 1000000000000000.0, 1000000000000000.0],
        "big_low": [1000000000000000.0, 1000000000000000.0, 1000000000000000.0, 1000000000000000.0],
        "big_high": [
            1000000000000000.0,
            1000000000000000.0,
            1000000000000000.0,
            1000000000000000.0,
        ],
        "w_sum": [10426.109375, 9035.279296875, 9956.484375, 9095.63671875],
        "w_sum_low": [9764.4267578125, 8373.5966796875, 9294.8017578125, 8433.9541015625],
        "w_sum_high": [11087.7919921875, 9696.9619140625, 10618.1669921875, 9757.3193359375],
    },
    "median": {
        # on the quantile grid four public keys give: 2**22 steps over the bounds
        # (aggregates.quantile_bits(4))
        "g": ["a", "b", "c", "d"],
        "count": [205, 198, 205, 192],
        "count_low": [204, 197, 204, 191],
        "count_high": [206, 199, 206, 193],
        "x_median": [57.109375, 55.320345759391785, 51.54833984375, 50.0],
        "x_median_low": [0.0, 34.68859860301018, 42.99999997019768, 41.237438172101974],
        "x_median_high": [
            74.7200508415699,
            74.46875002980232,
            90.44097903370857,
            71.25000002980232,
        ],
    },
    "zcdp": {
        "w_mean": [49.74509885403629],
        "w_mean_low": [49.61910642690994],
        "w_mean_high": [49.87014869442604],
        "k_sum": [13872.599975585938],
        "k_sum_low": [13817.163513183594],
        "k_sum_high": [13928.036437988281],
    },
    "inside": {
        "g": ["a", "b", "c", "d"],
        "x_mean": [56.59400850183823, 51.45319502002697, 51.66378963694853, 51.01035953185719],
        "x_mean_low": [55.01619989304315, 49.97122336182919, 50.226844424293155, 49.48247931985294],
        "x_mean_high": [
            58.267441874802714,
            53.026466888907066,
            53.18782243824968,
            52.603075649649064,
        ],
        "vx": [1510.1481890255177, 1487.5970043192299, 1890.3148223840665, 1758.7735961870562],
        "vx_low": [1128.2046301649307, 1127.264493521864, 1532.7706289260775, 1380.1459937915938],
        "vx_high": [1886.6114264912337, 1847.3068088427617, 2249.5116001959464, 2138.2589201430446],
        "pid_sum": [15414.083740234375, 15061.21484375, 15681.469970703125, 14122.733642578125],
        "pid_sum_low": [
            15114.510498046875,
            14761.6416015625,
            15381.896728515625,
            13823.160400390625,
        ],
        "pid_sum_high": [
            15713.656982421875,
            15360.7880859375,
            15981.043212890625,
            14422.306884765625,
        ],
        "k_sum": [3405.5891723632812, 3067.003448486328, 3556.162109375, 3616.615020751953],
        "k_sum_low": [
            3325.7029724121094,
            2987.1172485351562,
            3476.275909423828,
            3536.7288208007812,
        ],
        "k_sum_high": [3485.475372314453, 3146.8896484375, 3636.048309326172, 3696.501220703125],
    },
    "edge": {
        "g": ["a", "b", "c", "d"],
        "v_mean": [49.54376220703125, 48.418119598546795, 51.37597626034576, 51.25187079111735],
        "v_mean_low": [
            48.466473014987244,
            47.25286538843165,
            50.33430745051457,
            50.161353217230904,
        ],
        "v_mean_high": [
            50.59311847297513,
            49.513107223127356,
            52.481420711595185,
            52.4127443375126,
        ],
        "y_mean": [52.70717465298847, 48.343808866394355, 45.6120551348907, 47.7054916301947],
        "y_mean_low": [51.254255762640035, 46.76416015625, 43.997316931710024, 46.053908889358105],
        "y_mean_high": [54.24726867675781, 49.83007932766318, 47.13408109674043, 49.25647034620876],
        "z_sum": [10651.609252929688, 9475.43359375, 9527.130737304688, 9070.587280273438],
        "z_sum_low": [10411.95068359375, 9235.775024414062, 9287.47216796875, 8830.9287109375],
        "z_sum_high": [10891.267822265625, 9715.092163085938, 9766.789306640625, 9310.245849609375],
        "f_mean": [1000000000000000.8, 1000000000000000.9, 1000000000000000.8, 1000000000000000.8],
        "f_mean_low": [
            1000000000000000.8,
            1000000000000000.9,
            1000000000000000.8,
            1000000000000000.8,
        ],
        "f_mean_high": [
            1000000000000000.8,
            1000000000000000.9,
            1000000000000000.8,
            1000000000000000.9,
        ],
    },
}


UNIT: dict[str, dict[str, list[Any]]] = {
    "polars": {
        "g": ["a", "b", "c", "d"],
        "count": [117, 97, 95, 105],
        "count_low": [113, 93, 91, 101],
        "count_high": [121, 101, 99, 109],
        "x_mean": [60.96682480634269, 52.32220255533854, 58.01006576695393, 50.7108977695681],
        "x_mean_low": [56.29893109270635, 46.62432306463068, 52.8004638671875, 45.76806246849799],
        "x_mean_high": [66.7905779157366, 58.804202389407465, 64.83216349283855, 55.85247868363575],
        "w_var": [1218.95740493463, 713.8293141728813, 861.6524912516276, 560.6987671874999],
        "w_var_low": [503.27494125050055, 0.8918378941441745, 47.02632396720048, 0.0],
        "w_var_high": [1959.5056931515958, 1500.5533854166667, 1673.052734375, 1248.8081173780488],
    },
    "pandas": {
        "g": ["a", "b", "c", "d"],
        "count": [112, 99, 107, 98],
        "count_low": [108, 95, 103, 94],
        "count_high": [116, 103, 111, 102],
        "x_mean": [57.17987492654176, 51.233789195185125, 54.33486518509891, 50.74116223267835],
        "x_mean_low": [52.71746438647074, 45.50105382219146, 50.02930287845799, 45.40057798873546],
        "x_mean_high": [62.80251220703125, 57.37258177165744, 59.80651728312174, 56.30581877952398],
        "w_var": [1248.4865047477324, 690.5447433344875, 750.969968792084, 563.6898943243549],
        "w_var_low": [486.9539824695122, 0.0, 91.47234448156269, 0.0],
        "w_var_high": [
            2049.7314565373563,
            1465.0576806006493,
            1419.173592032967,
            1311.4130345394738,
        ],
    },
    "duckdb": {
        "g": ["a", "b", "c", "d"],
        "count": [110, 100, 113, 94],
        "count_low": [106, 96, 109, 90],
        "count_high": [114, 104, 117, 98],
        "x_mean": [59.376263042827986, 52.25024676579301, 52.290773076596466, 47.2896041067023],
        "x_mean_low": [54.61161164314516, 46.75434494018555, 47.98542695886948, 41.14130531869284],
        "x_mean_high": [65.40500563018176, 58.4774787902832, 57.18004174325981, 52.57850907488567],
        "w_var": [1269.0343208990155, 670.5847306269263, 684.9876653754039, 542.0324996449312],
        "w_var_low": [555.8109529931859, 0.0, 0.0, 0.0],
        "w_var_high": [
            2072.1714207848836,
            1418.2940565664558,
            1345.2196451822917,
            1329.0500660211267,
        ],
    },
    "spark": {
        "g": ["a", "b", "c", "d"],
        "count": [113, 102, 101, 98],
        "count_low": [109, 98, 97, 94],
        "count_high": [117, 106, 105, 102],
        "x_mean": [60.3770607396176, 47.92220523231908, 53.18823953276699, 49.119533962673614],
        "x_mean_low": [55.62251630167323, 41.87419686666349, 48.43848130967882, 43.53381986396257],
        "x_mean_high": [
            66.35554731010211,
            53.311400622856326,
            58.85904473198785,
            54.43906065475109,
        ],
        "w_var": [1202.949564029814, 642.5257796875001, 801.7600500606796, 622.101910623717],
        "w_var_low": [541.8992612571649, 0.0, 10.824454869848978, 0.0],
        "w_var_high": [1956.01484375, 1364.5127191310976, 1554.3827205882353, 1410.4772581335617],
    },
}


def _budget(kw: dict[str, Any]) -> Any:
    if "rho" in kw:
        return dp.ZCDP(1e9)
    if kw.get("delta"):
        return dp.ApproxDP(1e9, 0.5)
    return dp.PureDP(1e9)


def _recorded(name: str, engine_name: str) -> dict[str, list[Any]]:
    if name != "unit":
        return SHARED[name]
    family = engine_name if engine_name in UNIT else "polars"
    return UNIT[family]


def _warm(s: dp.Session) -> None:
    """A first release on ``s`` reading every numeric column, with its own seed (the
    Session's source is left untouched): later releases use what it learnt of the table."""
    cols = ("x", "w", "k", "pid", "v", "y", "z", "f")
    s.query().agg(*(dp.mean(c, bounds=(0, 1)) for c in cols)).release(epsilon=1.0, rng=99)


@pytest.mark.parametrize("name", list(QUERIES))
def test_release_equals_recorded(
    name: str,
    engine: Callable[[pl.DataFrame], Any],
    request: pytest.FixtureRequest,
    to_polars: Callable[[Any], pl.DataFrame],
) -> None:
    engine_name = request.node.callspec.params["engine"]
    expected = pl.DataFrame(_recorded(name, engine_name))
    session_kw, build, release_kw = QUERIES[name]
    table = _table()  # its schema declared: pandas and CSV data carry Polars' types
    s = dp.Session(
        engine(table), schema=table.schema, budget=_budget(release_kw), rng=17, **session_kw
    )
    got = to_polars(build(s).release(**release_kw))
    assert_frame_equal(got, expected, check_exact=True, check_dtypes=False)


@pytest.mark.parametrize("engine_name", ["polars", "pandas", "duckdb"])
@pytest.mark.parametrize("name", list(QUERIES))
def test_second_release_equals_recorded(
    name: str, engine_name: str, to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """The same values when the Session already knows its table (second release)."""
    session_kw, build, release_kw = QUERIES[name]
    data: Any = _table()
    if engine_name == "pandas":
        data = data.to_pandas()
    elif engine_name == "duckdb":
        import duckdb

        data = duckdb.connect().from_arrow(data.to_arrow())
    s = dp.Session(data, budget=_budget(release_kw), rng=17, **session_kw)
    _warm(s)
    got = to_polars(build(s).release(**release_kw))
    expected = pl.DataFrame(_recorded(name, engine_name))
    assert_frame_equal(got, expected, check_exact=True, check_dtypes=False)


def _in_bounds(s: dp.Session) -> Any:
    # every value of x and pid inside the bounds: a Session that kept the table's ranges
    # would leave out the clip
    return s.query().agg(dp.mean("x", bounds=(-20, 120)), dp.sum("pid", bounds=(0, 150)))


def test_pandas_data_changed_between_releases_is_clipped() -> None:
    """pandas data can change in place after a release: nothing learnt of it is kept, so a
    value moved outside the bounds is clipped like in a fresh Session on the new data."""
    pdf = _table().to_pandas()
    s = dp.Session(pdf, budget=dp.PureDP(1e9), rng=17)
    _in_bounds(s).release(epsilon=5.0, rng=1)
    pdf.loc[3, "x"] = 1e6
    pdf.loc[4, "pid"] = 10**6
    got = pl.from_pandas(_in_bounds(s).release(epsilon=5.0, rng=2))
    fresh = dp.Session(pdf.copy(), budget=dp.PureDP(1e9), rng=17)
    expected = pl.from_pandas(_in_bounds(fresh).release(epsilon=5.0, rng=2))
    assert got["x_mean"][0] < 120  # the mutation reached the Session's data and was clipped
    assert_frame_equal(got, expected, check_exact=True)


def test_polars_dataframe_changed_after_session_is_not_seen() -> None:
    """A Polars DataFrame is a snapshot: assigning to it later does not reach the Session,
    whose releases stay those of the data it was given."""
    df = _table()
    s = dp.Session(df, budget=dp.PureDP(1e9), rng=17)
    _in_bounds(s).release(epsilon=5.0, rng=1)
    original = df.clone()
    df[3, "x"] = 1e6
    got = _in_bounds(s).release(epsilon=5.0, rng=2)
    expected = _in_bounds(dp.Session(original, budget=dp.PureDP(1e9))).release(epsilon=5.0, rng=2)
    assert_frame_equal(got, expected, check_exact=True)
