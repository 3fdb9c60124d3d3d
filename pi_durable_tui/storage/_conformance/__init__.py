"""The storage conformance suite, split by subject; the public door is ``storage.conformance``."""
