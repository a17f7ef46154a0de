"""Factory prompts, loaded with importlib.resources and versioned in their file names."""
