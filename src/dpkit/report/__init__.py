"""Figures and the demo report (the top layer below the CLI)."""
