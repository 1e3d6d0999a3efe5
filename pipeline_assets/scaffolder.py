"""`dg scaffold defs pipeline_assets.component.LakenormComponent <path>`: a `defs.yaml` that names the project's
`lakenorm.yaml`, and a starter `lakenorm.yaml` at the project's root when it has none."""
import os
from pathlib import Path

import dagster as dg
from pydantic import BaseModel, ConfigDict

STARTER_CONFIG = """\
# lakenorm's configuration: each source is the folder a producer (Airbyte, dlt, Singer, your own scripts) writes
# its load packages into. Paths are relative to this file.
warehouse: data/warehouse              # the Delta tables' root: a folder or s3a://bucket/prefix
sources:
  - name: example                      # names the tables' folders and Dagster assets
    landing: data/landing/example      # the producer's output (created empty)
"""
"""What a new project's `lakenorm.yaml` says: one source, its landing folder empty."""


class LakenormScaffoldParams(BaseModel):
    """`dg scaffold defs ... --config-file PATH`: an existing configuration, relative to the new folder."""

    model_config = ConfigDict(extra="forbid")
    config_file: str | None = None


class LakenormScaffolder(dg.Scaffolder[LakenormScaffoldParams]):
    """Writes `defs.yaml` with `config_file` set: the one given, else the project root's `lakenorm.yaml`,
    written as `STARTER_CONFIG` (and its landing folder made) when there is none."""

    @classmethod
    def get_scaffold_params(cls) -> type[LakenormScaffoldParams]:
        return LakenormScaffoldParams

    def scaffold(self, request: dg.ScaffoldRequest[LakenormScaffoldParams]) -> None:
        config_file = request.params.config_file
        if config_file is None:
            config = (request.project_root or request.target_path) / "lakenorm.yaml"
            if not config.exists():
                write_starter_config(config)
            config_file = Path(os.path.relpath(config, request.target_path)).as_posix()
        dg.scaffold_component(request, {"config_file": config_file})


def write_starter_config(config: Path) -> None:
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(STARTER_CONFIG, encoding="utf-8")
    (config.parent / "data" / "landing" / "example").mkdir(parents=True, exist_ok=True)
