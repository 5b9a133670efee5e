"""One module per output format, each with `render(analysis, **options) -> str`."""
