"""Storage: load packages on disk or in a bucket, Delta tables and their writes, the registry and schema versions."""
