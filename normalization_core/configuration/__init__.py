"""The configuration layer: the lakenorm.yaml model (`config`), its schema settings, catalogs, and each stream's
settings; parsed and validated here, once, at the edge."""
