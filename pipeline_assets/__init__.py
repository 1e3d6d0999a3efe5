"""lakenorm's Dagster code location: assets, sensors and jobs built from the configuration."""
