"""Every identifier from data or configuration reaches Spark quoted by one function (SPEC §10).

`F.col("a.b")` is a struct access and `F.col("a`b")` a syntax error; a column named so must be read as
`sql_text.col(name)`, and a name written into SQL text as `sql_text.column_name(name)` (backticks doubled).
The source is parsed and every `F.col` / `F.column` argument and every piece of text that reaches Spark as SQL
(`F.expr`, `spark.sql`, `selectExpr`, a `replaceWhere`, a MERGE) is checked: a name is a literal, a constant
(`ROW`, `names.raw_id`: lakenorm's own names), or passes through the quoting functions; SQL text is built from
literals, constants and what those functions return. No hand-made quoting (a backtick in the text) outside
`sql_text`.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.normalization_core.test_connect_api import ROOT, library_modules

QUOTING = {"column_name", "string_literal", "table_ref", "in_list", "text_map", "sql_literal", "field_name"}
"""Functions whose result is quoted SQL text (`transform/sql_text.py`, `scd.sql_literal` for key bounds)."""
SQL_BUILDERS = {"value_kind", "_string_kind", "_children", "predicate", "quarantine_predicate", "_hours", "newest_rows",
                "_target_rows"}
"""Functions that return SQL text: what each returns is checked where it is defined."""
SAFE_CALLS = {"temp_view", "int", "float"}
"""Calls whose result is safe in SQL text: a generated view name, a number."""
SQL_SINKS = {"expr": (0,), "sql": (0,), "selectExpr": None, "merge_sql": (1,), "replace_where": (2,),
             "replace_slice": (3,), "replace_where_writer": (1,)}
"""Calls and the positions of their arguments that are SQL text (None: every one); also the keywords
`SQL_KEYWORDS` of any call, and `.option("replaceWhere", <text>)`."""
SQL_KEYWORDS = {"predicate", "target_rows"}
SQL_TEXT_PARAMETERS = {"predicate", "target_rows", "statement", "text", "nodes"}
"""Parameters that hold SQL text (built by the caller, where it is checked); any other parameter may hold a
name, which must be quoted where it enters the text."""
FUNCTIONS_MODULES = {"F", "functions"}
"""`F.col` / `F.column`: the argument is parsed as a (dotted, backticked) attribute name."""
SYSTEM_NAMES = {"names", "C", "R"}
"""Owners of lakenorm's own names: `names.raw_id`, `self.names.meta`, `C.LOADS_STREAM`, `R.TEXT`."""
QUOTING_MODULES = {"normalization_core/transform/sql_text.py", "normalization_core/naming/quoting.py"}


def _is_constant_name(node: ast.AST) -> bool:
    """A literal, an UPPER_CASE constant, or an attribute of the system names (`names.load_id`)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, int, float)) and "`" not in str(node.value)
    if isinstance(node, ast.Name):
        return node.id.isupper() or node.id.lstrip("_").isupper()
    if isinstance(node, ast.Attribute):
        base = node.value
        owner = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
        return node.attr.isupper() or owner in SYSTEM_NAMES
    return False


def _called(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return ""


class _Scope:
    """The local assignments and parameters of the functions around a call: a name used in SQL text is safe if
    all its values are; a parameter if it holds SQL text (`SQL_TEXT_PARAMETERS`)."""

    def __init__(self, functions: list[ast.AST]) -> None:
        self.values: dict[str, list[ast.AST]] = {}
        self.parameters: set[str] = set()
        for function in functions:
            arguments = function.args  # type: ignore[attr-defined]
            self.parameters |= {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
            for node in ast.walk(function):
                for name, value in _bindings(node):
                    self.values.setdefault(name, []).append(value)

    def sql_text(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> list[str]:
        """What in `node` (text that becomes SQL) is not built from literals, constants and quoted names."""
        if _is_constant_name(node) or _called(node) in QUOTING | SQL_BUILDERS | SAFE_CALLS | set(SQL_SINKS):
            return []  # (a sink returns a Column, its text checked as the sink's)
        if _called(node) in {"str", "repr"} and len(node.args) == 1:  # type: ignore[attr-defined]
            return self.sql_text(node.args[0], seen)  # type: ignore[attr-defined]
        if isinstance(node, ast.Constant):
            return [f"hand-quoted text {node.value!r}"] if "`" in str(node.value) else []
        if isinstance(node, ast.JoinedStr):
            return [problem for part in node.values for problem in self.sql_text(part, seen)]
        if isinstance(node, ast.FormattedValue):
            return self.sql_text(node.value, seen)
        if isinstance(node, ast.BinOp):
            return self.sql_text(node.left, seen) + self.sql_text(node.right, seen)
        if isinstance(node, ast.IfExp):
            return self.sql_text(node.body, seen) + self.sql_text(node.orelse, seen)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
            return self.sql_text(node.elt, seen)
        if _called(node) == "join" and isinstance(node.func.value, ast.Constant):  # type: ignore[attr-defined]
            return [p for argument in node.args for p in self.sql_text(argument, seen)]
        if isinstance(node, ast.Name) and node.id in self.values and node.id not in seen:
            return [p for value in self.values[node.id] for p in self.sql_text(value, seen | {node.id})]
        if isinstance(node, ast.Name) and node.id in self.parameters & SQL_TEXT_PARAMETERS:
            return []
        return [f"unquoted {ast.unparse(node)!r}"]


def _bindings(node: ast.AST):
    """(name, value) of the assignments in `node`: `x = v`, `with v as x`, and a comprehension's `for x in v`
    (its elements are checked as `v` is)."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _pairs(target, node.value)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield from _pairs(node.optional_vars, node.context_expr)
    elif isinstance(node, ast.comprehension) and isinstance(node.target, ast.Name):
        yield node.target.id, node.iter


def _pairs(target: ast.AST, value: ast.AST):
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts):
            yield from _pairs(t, v)


def unquoted_names(source: str) -> list[str]:
    """`line: what` for each name that reaches Spark unquoted, and each piece of hand-quoted SQL text."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            scope = _Scope(_enclosing_functions(node, parents))
            found += [f"{node.lineno}: {problem}" for problem in _call_problems(node, scope)]
        elif isinstance(node, ast.Return) and node.value is not None:
            functions = _enclosing_functions(node, parents)
            if functions and getattr(functions[0], "name", "") in SQL_BUILDERS:
                found += [f"{node.lineno}: {p}" for p in _Scope(functions).sql_text(node.value)]
    return found


def _enclosing_functions(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[ast.AST]:
    found = []
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            found.append(node)
    return found


def _call_problems(node: ast.Call, scope: _Scope) -> list[str]:
    name, func = _called(node), node.func
    problems = [p for k in node.keywords if k.arg in SQL_KEYWORDS for p in scope.sql_text(k.value)]
    if name in {"col", "column"} and isinstance(func, ast.Attribute) and getattr(func.value, "id", "") in \
            FUNCTIONS_MODULES and node.args and not _is_column_name(node.args[0], scope):
        problems.append(f"{ast.unparse(node)[:70]} (use sql_text.col)")
    if name in SQL_SINKS:
        positions = SQL_SINKS[name] or range(len(node.args))
        problems += [p for i in positions if i < len(node.args) for p in scope.sql_text(node.args[i])]
    if name == "option" and len(node.args) == 2 and getattr(node.args[0], "value", None) == "replaceWhere":
        problems += scope.sql_text(node.args[1])
    return problems


def _is_column_name(node: ast.AST, scope: _Scope) -> bool:
    """An argument of `F.col`: a constant name (or a choice of two), or a qualified name built from quoted parts."""
    if isinstance(node, ast.IfExp):
        return _is_column_name(node.body, scope) and _is_column_name(node.orelse, scope)
    return _is_constant_name(node) or isinstance(node, ast.JoinedStr) and not scope.sql_text(node)


def test_no_name_reaches_spark_unquoted():
    offenders = {}
    for path in library_modules():
        relative = path.relative_to(ROOT).as_posix()
        if relative not in QUOTING_MODULES and (found := unquoted_names(path.read_text(encoding="utf-8"))):
            offenders[relative] = found
    assert offenders == {}, "names reaching Spark without sql_text's quoting:\n" + "\n".join(
        f"  {module} {use}" for module, uses in offenders.items() for use in uses)


@pytest.mark.parametrize("snippet", [
    "F.col(column['name'])",
    "F.col(name)",
    "F.col(f'`{name}`')",
    "F.column(names.row_id(table))",
    "F.col(self.column)",
    "def f(df, name):\n    return F.expr(f'{name} IS NULL')",
    "F.expr('`' + key + '` = 1')",
    "spark.sql(f'SELECT * FROM delta.`{path}`')",
    "def f(spark, table):\n    statement = f'DESCRIBE {table}'\n    return spark.sql(statement)",
    "merge_sql(spark, f'MERGE INTO t USING v ON t.{key} = v.{key}')",
    "replace_where(df, path, f\"`{column}` = 'x'\")",
    "def predicate(column):\n    return f'{column} IS NULL'",
    "df.write.option('replaceWhere', f'{key} = 1')",
])
def test_the_scan_finds_each_unquoted_name(snippet):
    assert unquoted_names(snippet)


def test_the_scan_passes_quoted_names_and_constants():
    source = ("F.col(ROW)\nF.col(names.raw_id)\nF.col(self.names.meta)\nF.col('m.type')\ncol(column['name'])\n"
              "def f(spark, path):\n"
              "    statement = f'DESCRIBE HISTORY {table_ref(path)} LIMIT {DEPTH}'\n"
              "    return spark.sql(statement)\n"
              "def g(name, text):\n"  # `text`: SQL text handed in, checked where the caller builds it
              "    v = column_name(name)\n"
              "    return F.expr(f'CASE WHEN {v} IN ({text}) THEN 1 END')\n")
    assert unquoted_names(source) == []
