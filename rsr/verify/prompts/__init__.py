"""Prompt files of the verify layer (the hack-review judge's rubric)."""
