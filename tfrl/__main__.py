"""`python -m tfrl train|evaluate|export ...`: the tfrl command line (see `tfrl.cli.main`)."""

from tfrl.cli.main import run

if __name__ == "__main__":
    run()
