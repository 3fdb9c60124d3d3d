"""The one deadline of the tests: how long a test waits for what must happen (issue 12).

``WAIT`` guards against a hang; it is never a claim about speed. A test waits on
a condition (a commit, an event, a line, a process that ends) and goes on as
soon as it holds, so on an idle machine nothing waits long; on two cores shared
with other heavy work (the machine these tests are written for) the same step
may take many times longer, and a deadline of a few seconds would fail a
correct run. Timed assertions are not made at all.
"""

WAIT = 60.0
"""Seconds any single wait of a test may take before the test fails."""
