"""`python -m roller` is the same as the `roller` console script."""

from roller.cli.main import main

if __name__ == "__main__":
    main()
