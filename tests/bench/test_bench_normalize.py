"""The benchmark compares like with like: the plain-Spark floor writes the rows lakenorm writes."""
from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from bench_normalize import run_benchmark  # noqa: E402  (a script folder, not a package)

from normalization_core.samples import SampleSpec  # noqa: E402


def test_floor_and_lakenorm_write_the_same_rows_per_table(spark, tmp_path) -> None:
    spec = SampleSpec(packages=2, orders=40, customers=0, events=0, files_per_stream=2, seed=3)
    timings = run_benchmark(spark, spec, tmp_path, floor=True)

    assert set(timings.rows) == {"_norm_raw_orders", "orders", "orders__line_items",
                                 "orders__line_items__discounts", "orders__tags"}
    assert timings.rows["orders"] == (80, 80)
    assert timings.rows["_norm_raw_orders"] == (80, 80)
    for table, (lakenorm, floor) in timings.rows.items():
        assert lakenorm == floor, table
    assert timings.rows["orders__line_items"][0] >= 80  # every sample order has 1-5 line items
    for table in timings.rows:
        types = [[t for _, t in spark.read.format("delta").load(str(root / table)).dtypes]
                 for root in (tmp_path / "warehouse" / "shop", tmp_path / "floor")]
        assert types[0] == types[1], table
