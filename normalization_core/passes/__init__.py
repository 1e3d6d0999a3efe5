"""Passes: one pass over complete load packages (`normalize`), a rebuild from raw (`rebuild`), and what earlier
passes registered, read back (`registered`)."""
