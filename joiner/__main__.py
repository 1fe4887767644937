"""``python -m joiner``: the same command line as the ``joiner`` script (``joiner.cli.main``)."""

from joiner.cli.main import main

if __name__ == "__main__":
    main()
