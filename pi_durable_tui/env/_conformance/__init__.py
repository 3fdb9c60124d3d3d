"""Groups of the environment conformance suite; the public face is ``env.conformance``."""
