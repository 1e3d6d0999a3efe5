"""`dg scaffold defs pipeline_assets.component.LakenormComponent <path>`, through the function `dg` calls in the
project's environment: the `defs.yaml` it writes names a configuration that lakenorm reads."""
from __future__ import annotations

import json

import yaml
from dagster.components.component_scaffolding import scaffold_object

from normalization_core.api import load_config

COMPONENT = "pipeline_assets.component.LakenormComponent"


def scaffold(project, folder: str, params: dict | None = None):
    target = project / "src" / "my_project" / "defs" / folder
    scaffold_object(target, COMPONENT, json.dumps(params) if params else None, "yaml", project)
    return yaml.safe_load((target / "defs.yaml").read_text()), target


def test_a_project_without_a_configuration_gets_a_starter_one_that_lakenorm_reads(tmp_path):
    declared, target = scaffold(tmp_path, "lakenorm")
    assert declared == {"type": COMPONENT, "attributes": {"config_file": "../../../../lakenorm.yaml"}}
    config = load_config(target / declared["attributes"]["config_file"])
    assert [source.name for source in config.sources] == ["example"]
    assert config.sources[0].landing == tmp_path / "data" / "landing" / "example"
    assert config.warehouse == str(tmp_path / "data" / "warehouse")


def test_the_projects_own_configuration_is_named_and_left_as_it_is(tmp_path):
    (tmp_path / "lakenorm.yaml").write_text("warehouse: lake\nsources: []\n")
    declared, _ = scaffold(tmp_path, "tables")
    assert declared["attributes"] == {"config_file": "../../../../lakenorm.yaml"}
    assert (tmp_path / "lakenorm.yaml").read_text() == "warehouse: lake\nsources: []\n"
    assert not (tmp_path / "data").exists()


def test_a_config_file_given_is_written_as_given_and_nothing_else(tmp_path):
    declared, _ = scaffold(tmp_path, "lakenorm", {"config_file": "../../../../conf/lake.yaml"})
    assert declared["attributes"] == {"config_file": "../../../../conf/lake.yaml"}
    assert not (tmp_path / "lakenorm.yaml").exists() and not (tmp_path / "data").exists()
