"""The command line: its flags and subcommands (`compare`, `server`), the files a run lints, progress and exit
status. May import every other package (the layers: tests/test_layers.py)."""
