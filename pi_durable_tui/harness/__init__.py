"""Layer 3: the harness (conversations, submissions, built-in tasks)."""
