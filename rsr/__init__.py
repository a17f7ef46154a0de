"""rsr: terminal-agent evaluation and training suite built on Inspect AI."""

__version__ = "0.1.0"
