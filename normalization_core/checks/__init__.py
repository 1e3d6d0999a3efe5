"""Validation of written and incoming data: the data checks behind the asset checks (`data_checks`) and the
non-nullable hints that fail a load (`not_null`). Each runs a small Spark aggregate and reports or raises."""
