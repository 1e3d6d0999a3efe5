"""Peer: DuckDB reads the sample packages' order files and writes the four order tables to Delta (delta-rs).

    python bench/peer_duckdb.py LANDING OUT [--threads 2]

The single-node alternative a user would try: one `read_json` with the orders' nested types, then
`orders`, `orders__line_items`, `orders__line_items__discounts` and `orders__tags` with 128-bit keys
(md5), parent keys and list indexes, written with `deltalake.write_deltalake`. No raw table, no checks,
no dedup. Prints one JSON line: seconds to read, total seconds, rows per table.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ADDRESS = "STRUCT(city VARCHAR, zip VARCHAR, country VARCHAR)"
DISCOUNT = "STRUCT(code VARCHAR, amount DOUBLE)"
ORDER_TYPES = {
    "id": "BIGINT", "created_at": "TIMESTAMPTZ", "updated_at": "TIMESTAMPTZ", "shipped_at": "TIMESTAMPTZ",
    "status": "VARCHAR", "total": "DOUBLE", "currency": "VARCHAR",
    "customer": f"STRUCT(id BIGINT, email VARCHAR, name VARCHAR, vip BOOLEAN, address {ADDRESS})",
    "line_items": f"STRUCT(sku VARCHAR, qty BIGINT, price DOUBLE, discounts {DISCOUNT}[])[]",
    "tags": "VARCHAR[]", "notes": "VARCHAR", "attributes": "JSON",
}
ITEMS = """SELECT md5(id_ || ':line_items:' || pos) AS _norm_id, id_ AS _norm_parent_id, id_ AS _norm_root_id,
                  pos - 1 AS _norm_list_idx, item FROM (
             SELECT _norm_id AS id_, unnest(line_items) AS item, generate_subscripts(line_items, 1) AS pos FROM base)"""
TABLES = {
    "orders": """SELECT _norm_id, _norm_load_id, id, created_at, updated_at, shipped_at, status, total, currency,
                        customer.id AS customer__id, customer.email AS customer__email,
                        customer.name AS customer__name, customer.vip AS customer__vip,
                        customer.address.city AS customer__address__city,
                        customer.address.zip AS customer__address__zip,
                        customer.address.country AS customer__address__country,
                        notes, attributes::VARCHAR AS attributes FROM base""",
    "orders__line_items": """SELECT _norm_id, _norm_parent_id, _norm_root_id, _norm_list_idx,
                                    item.sku AS sku, item.qty AS qty, item.price AS price FROM items""",
    "orders__line_items__discounts": """SELECT md5(pid || ':discounts:' || pos) AS _norm_id, pid AS _norm_parent_id,
                                               root AS _norm_root_id, pos - 1 AS _norm_list_idx,
                                               d.code AS code, d.amount AS amount FROM (
                                          SELECT _norm_id AS pid, _norm_root_id AS root,
                                                 unnest(item.discounts) AS d,
                                                 generate_subscripts(item.discounts, 1) AS pos FROM items)""",
    "orders__tags": """SELECT md5(_norm_id || ':tags:' || pos) AS _norm_id, _norm_id AS _norm_parent_id,
                              _norm_id AS _norm_root_id, pos - 1 AS _norm_list_idx, tag AS value FROM (
                         SELECT _norm_id, unnest(tags) AS tag, generate_subscripts(tags, 1) AS pos FROM base)""",
}


def run(landing: Path, out: Path, threads: int) -> dict:
    import duckdb
    from deltalake import DeltaTable, write_deltalake

    files = sorted(str(f) for f in landing.glob("*/orders/*.jsonl*"))
    started = time.monotonic()
    con = duckdb.connect()
    con.execute(f"SET threads={threads}")
    columns = "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in ORDER_TYPES.items()) + "}"
    load_id = "split_part(filename, '/', -3)"
    con.execute(f"""CREATE TEMP TABLE base AS
        SELECT *, md5({load_id} || ':' || id || ':' || updated_at) AS _norm_id, {load_id} AS _norm_load_id
        FROM read_json({files!r}, columns={columns}, format='newline_delimited', filename=true)""")
    con.execute(f"CREATE TEMP TABLE items AS {ITEMS}")
    read_s = time.monotonic() - started
    for name, sql in TABLES.items():
        write_deltalake(str(out / name), con.sql(sql).to_arrow_reader(1_000_000), mode="overwrite")
    total = time.monotonic() - started
    rows = {name: DeltaTable(str(out / name)).to_pyarrow_dataset().count_rows() for name in TABLES}
    return {"files": len(files), "read_s": round(read_s, 2), "total_s": round(total, 2), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("landing", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(run(args.landing, args.out, args.threads)))


if __name__ == "__main__":
    main()
