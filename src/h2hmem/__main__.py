"""``python -m h2hmem`` — the ``h2hmem`` command (:func:`h2hmem.cli.main`), for environments where the
console script is not on ``PATH``."""

from h2hmem.cli import main

if __name__ == "__main__":
    main()
