"""What operators use around the jobs: the ``Admin`` API, filter-wide actions,
system checks, retention, metrics, log format and unserved queues.

See docs/ARCHITECTURE.md for which part may import which.
"""
