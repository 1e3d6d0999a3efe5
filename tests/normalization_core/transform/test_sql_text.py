"""Expressions built as SQL text (`transform/sql_text`) read back exactly what Python wrote: quotes, backslashes,
backticks and regular expressions in field names, values and column names."""
from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import functions as F

from normalization_core.transform.sql_text import column_name, is_in, not_in, string_literal, text_struct

CASES = Path(__file__).parents[2] / "cases"
TEXTS = json.loads((CASES / "sql_text" / "texts.json").read_text(encoding="utf-8"))["texts"]


def test_string_literals_and_structs_read_back_as_written(spark):
    literals = [F.expr(string_literal(text)).alias(f"t{i}") for i, text in enumerate(TEXTS)]
    struct = text_struct({"field": TEXTS[1], "change": TEXTS[2], "reason": TEXTS[-5]}).alias("s")
    (row,) = spark.range(1).select(*literals, struct).collect()  # one test row
    assert [row[f"t{i}"] for i in range(len(TEXTS))] == TEXTS
    assert row["s"].asDict() == {"field": TEXTS[1], "change": TEXTS[2], "reason": TEXTS[-5]}
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in spark.range(1).select(struct).schema[0]
            .dataType.fields] == [("field", "string", False), ("change", "string", False), ("reason", "string", False)]


def test_a_regular_expression_in_a_literal_matches_as_in_python(spark):
    pattern = TEXTS[10]
    rows = spark.createDataFrame([(" 12.5",), ("1e3",), ("-7.",)], "t string")
    got = {r["t"]: r["m"] for r in rows.select("t", F.expr(f"t RLIKE {string_literal(pattern)}").alias("m"))
           .collect()}  # three test rows
    assert got == {" 12.5": True, "1e3": False, "-7.": True}


def test_membership_of_a_named_column_with_nulls_and_no_values(spark):
    name = "odd `name` #1"
    rows = spark.createDataFrame([("a",), ("it's",), ("z",), (None,)], f"{column_name(name)} string")
    checks = {"in": is_in(name, ["a", "it's"]), "not_in": not_in(name, ["a", "it's"]),
              "in_none": is_in(name, []), "not_in_none": not_in(name, [])}
    selected = rows.select(F.col(column_name(name)), *[check.alias(key) for key, check in checks.items()])
    got = [tuple(row) for row in selected.collect()]  # four test rows
    assert got == [("a", True, False, False, True), ("it's", True, False, False, True),
                   ("z", False, True, False, True), (None, None, False, False, False)]
