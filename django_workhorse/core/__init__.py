"""What a project declares: jobs and their options, the settings, schedules,
and the rules payloads and names must meet.

Nothing here runs a job or imports the worker; see docs/ARCHITECTURE.md for
which part may import which.
"""
