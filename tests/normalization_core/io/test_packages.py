"""Discovery and validation of load packages (SPEC §2.1): no Spark needed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from normalization_core.errors import PackageError
from normalization_core.io.load_packages import discover_packages, find_package

SOURCE = "shop"


def write_package(landing: Path, load_id: str, created_at: str = "2024-06-01T00:00:00Z",
                  manifest: dict | None = None, manifest_text: str | None = None, complete: bool = True) -> Path:
    folder = landing / load_id
    (folder / "s").mkdir(parents=True, exist_ok=True)
    (folder / "s.jsonl").write_text('{"a": 1}\n')
    (folder / "s.csv").write_text("a\n1\n")
    doc = manifest or {"load_id": load_id, "created_at": created_at, "source": SOURCE, "format": "records",
                       "streams": {"s": {"files": ["s.jsonl"], "records": 1}}}
    if complete:
        text = manifest_text if manifest_text is not None else json.dumps(doc).replace("$ID", load_id)
        (folder / "_manifest.json").write_text(text)
    return folder


def test_incomplete_packages_are_ignored_and_complete_ones_found(tmp_path):
    write_package(tmp_path, "L1")
    write_package(tmp_path, "L2", complete=False)
    found = discover_packages(tmp_path, SOURCE)
    assert [p.load_id for p in found.packages] == ["L1"]
    assert found.rejected == ()
    assert find_package(tmp_path, SOURCE, "L2") is None


def test_arrival_order_is_created_at_then_load_id(tmp_path):
    write_package(tmp_path, "b", "2024-06-01T00:00:00Z")
    write_package(tmp_path, "a", "2024-06-01T02:00:00+02:00")  # the same instant as b
    write_package(tmp_path, "c", "2024-05-31T23:59:59Z")
    write_package(tmp_path, "1717200000.123456", "2024-06-02T00:00:00Z")
    assert [p.load_id for p in discover_packages(tmp_path, SOURCE).packages] == ["c", "a", "b", "1717200000.123456"]


def test_manifest_with_bom_is_read(tmp_path):
    folder = write_package(tmp_path, "L1")
    (folder / "_manifest.json").write_text("\ufeff" + (folder / "_manifest.json").read_text(), encoding="utf-8")
    assert discover_packages(tmp_path, SOURCE).packages[0].stream_files == {"s": ("s.jsonl",)}


@pytest.mark.parametrize("case", json.loads((Path(__file__).parents[2] / "cases/packages/bad_manifests.json").read_text()),
                         ids=lambda c: c["name"])
def test_an_invalid_manifest_rejects_only_its_package(tmp_path, case):
    write_package(tmp_path, "good")
    write_package(tmp_path, "bad", manifest=case.get("manifest"), manifest_text=case.get("manifest_text"))
    found = discover_packages(tmp_path, SOURCE)
    assert [p.load_id for p in found.packages] == ["good"]
    assert [r.load_id for r in found.rejected] == ["bad"]
    assert case["error"] in found.rejected[0].reason
    assert "\n" not in found.rejected[0].reason
    with pytest.raises(PackageError, match="load package 'bad'"):
        find_package(tmp_path, SOURCE, "bad")


def test_unsafe_load_id_is_refused_before_touching_the_filesystem(tmp_path):
    with pytest.raises(PackageError, match="not a valid load ID"):
        find_package(tmp_path, SOURCE, "../x")
