"""The lakenorm application: the `lakenorm` command line (`cli`, `commands`), the demo and its sample packages,
and the set-up step that records the JVM class archive. Uses the library through `normalization_core.api` and the
Dagster code in `pipeline_assets`; neither imports it."""
