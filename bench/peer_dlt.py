"""Peer: real dlt normalizing lakenorm's sample packages into Delta tables, one `pipeline.run` per package.

    python bench/peer_dlt.py LANDING OUT [--merge orders,customers] [--streams orders,customers,events]

Reads each package's files as its manifest lists them (records format), one dlt resource per stream,
into dlt's filesystem destination with `table_format="delta"`. Streams named in `--merge` use dlt's
`merge` disposition (upsert on `id`, as lakenorm's `append_dedup`); the others `append`.
Prints one JSON line: packages, seconds per phase and total, rows per table (read back with delta-rs).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

BATCH = 1000


def records(files: list[Path]) -> Iterator[list[dict]]:
    """The JSON objects of the files in lists of `BATCH` (lines that are not objects are skipped)."""
    import orjson

    batch: list[dict] = []
    for path in files:
        with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as handle:
            for line in handle:
                line = line.strip().removeprefix(b"\xef\xbb\xbf")
                if not line:
                    continue
                value = orjson.loads(line)
                if isinstance(value, dict):
                    batch.append(value)
                if len(batch) == BATCH:
                    yield batch
                    batch = []
    if batch:
        yield batch


def package_resources(package: Path, streams: list[str], merge: set[str]) -> list:
    import dlt

    manifest = json.loads((package / "_manifest.json").read_text())
    resources = []
    for stream in streams:
        files = [package / f for f in manifest["streams"].get(stream, {}).get("files", [])]
        if not files:
            continue
        hints: dict = {"write_disposition": "append"}
        if stream in merge:
            hints = {"write_disposition": {"disposition": "merge", "strategy": "upsert"}, "primary_key": "id"}
        resources.append(dlt.resource(records(files), name=stream, table_format="delta", **hints))
    return resources


def run(landing: Path, out: Path, streams: list[str], merge: set[str]) -> dict:
    os.environ["DLT_DATA_DIR"] = str(out / "dlt_data")
    os.environ["DLT_PIPELINES_DIR"] = str(out / "pipelines")
    import dlt

    started = time.monotonic()
    destination = dlt.destinations.filesystem(bucket_url=(out / "tables").resolve().as_uri())
    pipeline = dlt.pipeline(pipeline_name="peer", destination=destination, dataset_name="shop")
    phases = {"extract": 0.0, "normalize": 0.0, "load": 0.0}
    packages = sorted(p for p in landing.iterdir() if (p / "_manifest.json").is_file())
    for package in packages:
        for phase, step in (("extract", lambda: pipeline.extract(package_resources(package, streams, merge))),
                            ("normalize", pipeline.normalize), ("load", pipeline.load)):
            began = time.monotonic()
            step()
            phases[phase] += time.monotonic() - began
    total = time.monotonic() - started
    return {"packages": len(packages), "total_s": round(total, 2), **{k: round(v, 2) for k, v in phases.items()},
            "rows": table_rows(out / "tables" / "shop")}


def table_rows(dataset: Path) -> dict[str, int]:
    from deltalake import DeltaTable

    return {d.name: DeltaTable(str(d)).to_pyarrow_dataset().count_rows()
            for d in sorted(dataset.iterdir()) if (d / "_delta_log").is_dir()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("landing", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--streams", default="orders,customers,events")
    parser.add_argument("--merge", default="orders,customers")
    args = parser.parse_args()
    merge = set(filter(None, args.merge.split(",")))
    print(json.dumps(run(args.landing, args.out, args.streams.split(","), merge)))


if __name__ == "__main__":
    main()
