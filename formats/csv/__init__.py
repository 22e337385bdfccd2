"""The csv family: `csv` (CsvCodec), which the codec registry names by module; this package imports nothing, so that
the format loads when first asked for."""
