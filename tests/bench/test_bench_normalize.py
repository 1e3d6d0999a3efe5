"""The benchmark compares like with like: the plain-Spark floor and the peers write the rows lakenorm writes."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from bench_normalize import peers, run_benchmark  # noqa: E402  (a script folder, not a package)

from lakenorm_app.samples import SampleSpec  # noqa: E402

ORDER_TABLES = ("orders", "orders__line_items", "orders__line_items__discounts", "orders__tags")


@pytest.fixture(scope="module")
def bench_run(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    spec = SampleSpec(packages=2, orders=40, customers=0, events=0, files_per_stream=2, seed=3)
    return out, run_benchmark(spark, spec, out, floor=True)


def test_floor_and_lakenorm_write_the_same_rows_per_table(spark, bench_run) -> None:
    out, timings = bench_run

    assert set(timings.rows) == {"_norm_raw_orders", *ORDER_TABLES}
    assert timings.rows["orders"] == (80, 80)
    assert timings.rows["_norm_raw_orders"] == (80, 80)
    for table, (lakenorm, floor) in timings.rows.items():
        assert lakenorm == floor, table
    assert timings.rows["orders__line_items"][0] >= 80  # every sample order has 1-5 line items
    for table in timings.rows:
        types = [[t for _, t in spark.read.format("delta").load(str(root / table)).dtypes]
                 for root in (out / "warehouse" / "shop", out / "floor")]
        assert types[0] == types[1], table


@pytest.mark.slow
def test_real_dlt_and_duckdb_write_the_order_rows_lakenorm_writes(bench_run) -> None:
    out, timings = bench_run

    results = peers(out)

    for name, (seconds, printed) in results.items():
        assert seconds > 0
        assert {t: printed["rows"][t] for t in ORDER_TABLES} == {t: timings.rows[t][0] for t in ORDER_TABLES}, name
