"""The code location of `make ui` (workspace.yaml): the project's defs/ folder, lakenorm's component in it."""
from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    project = dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
    # Runs of a selection of assets in the run's process too, as lakenorm's own jobs (one step each; a step
    # process of its own would load the code location again before starting its JVM).
    return dg.Definitions.merge(project, dg.Definitions(executor=dg.in_process_executor))
