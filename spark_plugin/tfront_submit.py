"""``tfront`` as a ``spark-submit`` application (``spark-submit`` runs ``.py`` files only)::

    spark-submit --master yarn --driver-memory 8g \\
        "$(python -c 'import spark_plugin.tfront_submit as m; print(m.__file__)')" \\
        wcc hdfs:///data/edges --epochs 4 --out hdfs:///data/labels

The arguments after the file are ``tfront``'s. ``spark-submit``'s master and settings win
over ``tfront wcc``'s defaults (``docs/spark.md``, "Running tfront wcc with spark-submit").
"""

import os
import sys


def _main() -> int:
    # Run as a script, this file's directory (spark_plugin/) is sys.path[0]: drop it, so that
    # its modules (config, errors, schema, ...) cannot shadow top-level modules of those names.
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        sys.path.pop(0)
    from engine.cli.main import main

    return main()


if __name__ == "__main__":
    sys.exit(_main())
