"""The `tfrl` command line: `tfrl train`, `tfrl evaluate`, `tfrl export`.

See `tfrl.cli.main` for the commands, flags and the experiment file format. Only
`tfrl.cli.main` reads absl flags; the other modules take plain arguments.
"""
