"""The certification suite: thirteen checks, written once, run for every installed connector.

Never shipped and never imported by a wheel (tests/test_layout.py enforces it). See
docs/certification-guide.md for how a connector opts in and docs/certification.md for
the results, generated from the run.
"""
