"""Data and policies every layer may use: frozen dataclasses, memoisation, findings, the options a lint runs
under, the work budget, exit codes, reading input. Imports nothing else of kernlint."""
