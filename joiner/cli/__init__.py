"""Command-line interface (typer): ``joiner simulate``, ``joiner schema``."""
