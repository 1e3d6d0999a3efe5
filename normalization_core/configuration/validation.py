"""The configuration's JSON Schema (`lakenorm.schema.json`, shipped with the package) and its errors as one
clear `ConfigError` line naming the key path: the schema checks every key's type, choices and range, the
parsers (config.py) what a schema cannot say (files that must exist, unique names, limits per convention)."""
from __future__ import annotations

import difflib
import functools
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, ValidationError

from normalization_core.errors import ConfigError

SCHEMA_FILE = "lakenorm.schema.json"
_ENTRY = {"sources": "a source", "streams": "a stream override", "columns": "a column hint"}
"""What one entry of these lists or mappings is called in an unknown-key message."""


def schema_path() -> Path:
    """The schema file as installed (the repository's own file in an editable install)."""
    return Path(str(resources.files(__package__).joinpath(SCHEMA_FILE)))


@functools.cache
def config_schema() -> dict[str, Any]:
    """The JSON Schema of `lakenorm.yaml`."""
    return json.loads(schema_path().read_text(encoding="utf-8"))


@functools.cache
def _validator() -> Draft202012Validator:
    Draft202012Validator.check_schema(config_schema())
    return Draft202012Validator(config_schema())


def config_yaml(doc: dict[str, Any]) -> str:
    """A configuration document as YAML whose first line points editors (yaml-language-server) at the schema."""
    return f"# yaml-language-server: $schema={schema_path()}\n" + yaml.safe_dump(doc, sort_keys=False)


def check_schema(doc: Any, where: str) -> None:
    """Raise `ConfigError` for the first mistake the schema finds (the one nearest the top of the document)."""
    errors = list(_validator().iter_errors(doc))
    if errors:
        error = _specific(min(errors, key=lambda e: len(e.absolute_path)))
        path = list(error.absolute_path)
        at, message = _explain(error, path, doc)
        raise ConfigError(": ".join([where, *_render(at, doc)]), message)


def unknown_key(key: str, allowed: list[str], what: str) -> str:
    """`unknown key 'conventoin' in a source: did you mean 'convention'? (allowed: ...)`."""
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f": did you mean {close[0]!r}?" if close else ""
    return f"unknown key {key!r} in {what}{hint} (allowed: {', '.join(allowed)})"


def _specific(error: ValidationError) -> ValidationError:
    """An `anyOf` error's reason in the branch of the value's own type (a mapping's unknown key, a string's
    unknown choice), when there is one."""
    if error.validator in ("anyOf", "oneOf"):
        branches: dict[Any, list[ValidationError]] = {}
        for reason in error.context or ():
            branches.setdefault(reason.relative_schema_path[0], []).append(reason)
        reasons = [e for branch in branches.values() if not any(e.validator == "type" and not e.path for e in branch)
                   for e in branch]
        if reasons:
            return _specific(min(reasons, key=lambda e: len(e.absolute_path)))
    return error


def _explain(error: ValidationError, path: list, doc: Any) -> tuple[list, str]:
    """(the path the message is about, the message)."""
    schema, value, kind = error.schema, error.instance, error.validator
    if kind == "additionalProperties":
        allowed = sorted(schema.get("properties", {})) + [_pattern_name(p) for p in schema.get("patternProperties", {})]
        extra = sorted(k for k in map(str, value) if k not in schema.get("properties", {})
                       and not any(re.search(p, k) for p in schema.get("patternProperties", {})))
        return path, unknown_key(extra[0], allowed, _what(path))
    if kind == "required":
        key = next(k for k in error.validator_value if k not in value)
        explained = _phrase(_resolve(schema["properties"][key]), plain=False)
        return path, f"missing key {key!r}" + (f" ({explained})" if explained else "")
    if path and isinstance(path[-1], int) and kind == "enum":  # an item of a list of choices
        listed = _at(doc, path[:-1])
        return path[:-2], f"{path[-2]!r} must be a list of {', '.join(schema['enum'])}, got {listed!r}"
    if kind == "enum":
        choices = ", ".join(map(str, schema["enum"]))
        if "title" in schema:
            return path, f"unknown {schema['title']} {value!r} (choose one of {choices})"
        return path[:-1], f"unknown {path[-1]} {value!r} (choose one of {choices})"
    if not path:
        return path, f"the top level must be {_phrase(schema)}, got {value!r}"
    if isinstance(path[-1], int):  # an item of a list: `'sources[1]'`
        return path[:-2], f"'{path[-2]}[{path[-1]}]' must be {_phrase(schema)}, got {value!r}"
    return path[:-1], f"{schema.get('title') or repr(path[-1])} must be {_phrase(schema)}, got {value!r}"


def _phrase(schema: dict[str, Any], plain: bool = True) -> str:
    """What a value must be: a description's first sentence when it is written as one (lower case), else from
    its type (`plain`; else nothing)."""
    first = schema.get("description", "").split(". ")[0].rstrip(".")
    if first[:1].islower():
        return first
    if not plain:
        return first[:1].lower() + first[1:]
    types = [t for t in ([schema["type"]] if isinstance(schema.get("type"), str) else schema.get("type", []))
             if t != "null"]
    if types == ["integer"]:
        return {0: "a non-negative integer", 1: "a positive integer"}.get(schema.get("minimum"), "an integer")
    if types == ["array"]:
        items = _resolve(schema.get("items", {}))
        if "enum" in items:
            return f"a list of {', '.join(items['enum'])}"
        return "a non-empty list" if schema.get("minItems") else "a list"
    words = {"boolean": "true or false", "string": "a non-empty text" if schema.get("minLength") else "a text",
             "object": "a mapping", "number": "a number"}
    return " or ".join(words.get(t, t) for t in types) or "valid"


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    return {**config_schema()["$defs"][ref.rsplit("/", 1)[1]], **schema} if ref.startswith("#/$defs/") else schema


def _pattern_name(pattern: str) -> str:
    """`^spark\\.` -> `spark.*` (a family of keys, in the list of allowed ones)."""
    return pattern.lstrip("^").replace("\\.", ".") + "*"


def _what(path: list) -> str:
    if not path:
        return "the top level"
    if len(path) > 1 and str(path[-2]) in _ENTRY:
        return _ENTRY[str(path[-2])]
    return f"{str(path[-1])!r}"


def _at(doc: Any, path: list) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _render(path: list, doc: Any) -> list[str]:
    """`sources[0] (shop)`, then the rest of the path as dotted keys (`streams.orders.columns.id`)."""
    segments: list[str] = []
    rest = list(path)
    if len(rest) >= 2 and rest[0] == "sources" and isinstance(rest[1], int):
        name = _at(doc, rest[:2]).get("name") if isinstance(_at(doc, rest[:2]), dict) else None
        segments.append(f"sources[{rest[1]}]" + (f" ({name})" if isinstance(name, str) else ""))
        rest = rest[2:]
    if rest:
        segments.append(".".join(f"[{k}]" if isinstance(k, int) else str(k) for k in rest).replace(".[", "["))
    return segments
