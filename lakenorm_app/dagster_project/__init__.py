"""The demo's code location as a Dagster project has it (`make ui`, workspace.yaml): a `defs/` folder whose
`defs.yaml` declares `LakenormComponent`, loaded with `dg.load_from_defs_folder` (`dg.toml` names the folder)."""
