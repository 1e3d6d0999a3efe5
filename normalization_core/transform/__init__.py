"""Pure transforms: `DataFrame -> DataFrame` and `Column -> Column`, no I/O."""
