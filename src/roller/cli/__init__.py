"""Command-line interface: one module per command, registered in `roller.cli.main`.

Nothing imports `roller.cli`; it is the top layer.
"""
