"""CLI commands beyond `assess`, one module each (registered in sdcbayes/cli.py)."""
