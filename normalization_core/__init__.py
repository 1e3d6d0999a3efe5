"""lakenorm's normalization library: pure PySpark, usable from a notebook, no Dagster import."""

__version__ = "0.1.0"
