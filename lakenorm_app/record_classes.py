"""`python -m lakenorm_app.record_classes`: record the driver JVM's class archive (a set-up step of `make`).

The recorded run is the demo's work in small: sample packages normalized load by load (tables created,
then MERGEd into), tables read back. See `normalization_core.runtime.class_archive`.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from lakenorm_app.demo import SOURCE, write_demo_files
from lakenorm_app.samples import SampleSpec
from normalization_core.api import SourceTables, ensure_class_archive, load_config, normalize_loads, read_table, \
    recording_session

RECORDED_LOADS = SampleSpec(packages=2, orders=100, customers=50, events=100)


def record_run(archive: Path) -> None:
    """Normalize the sample loads, one pass each, in a session whose JVM writes its classes to `archive`."""
    with tempfile.TemporaryDirectory(prefix="lakenorm-class-archive-") as root:
        config = load_config(write_demo_files(Path(root), RECORDED_LOADS))
        tables = SourceTables(config, config.source(SOURCE))
        local = {k: v for k, v in config.spark.items() if k != "remote"}  # a driver in this process records
        with recording_session(local, archive) as spark:
            for load_id in sorted(p.name for p in (Path(root) / "landing" / SOURCE).iterdir()):
                normalize_loads(spark, config, SOURCE, [load_id])
            for table in tables.stored_tables():
                read_table(spark, tables.path(table)).count()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lakenorm_app.record_classes")
    parser.add_argument("--record", type=Path, metavar="ARCHIVE", help="(internal) the recording run itself")
    args = parser.parse_args(argv)
    if args.record:
        record_run(args.record)
        return
    archive, recorded = ensure_class_archive("lakenorm_app.record_classes")
    size = f" ({archive.stat().st_size // 2**20} MiB)" if recorded else ""
    print(f"JVM class archive {'recorded' if recorded else 'is current'}: {archive}{size}")


if __name__ == "__main__":
    main()
