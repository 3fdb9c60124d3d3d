"""Layer 4: the built-in coding tools."""
