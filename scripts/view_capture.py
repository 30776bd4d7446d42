"""View a capture's call tree: `PYTHONPATH=src python scripts/view_capture.py PATH [--json]`.

The same as `roller view`; reads the capture, copies nothing.
"""

from roller.cli.main import main

if __name__ == "__main__":
    import sys

    main(["view", *sys.argv[1:]])
