"""The Spark runtime: sessions (local drivers and Spark Connect clients), the local engine and its runs, the JVM's
jars, class archive and output."""
