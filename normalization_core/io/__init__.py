"""The I/O edge: Spark sessions, load packages on disk, Delta tables."""
