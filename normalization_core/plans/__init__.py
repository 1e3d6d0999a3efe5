"""Plans: what a pass writes for each stream (`StreamPlan`: settings, schema, disposition), made once per pass from
the source (`stream_plans`, `load_plans`), and where the source's tables live (`SourceTables`)."""
