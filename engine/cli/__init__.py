"""The ``tfront`` command line (:mod:`~engine.cli.main`), the top layer: it imports the engine,
never the other way (the progress pictures it draws are :mod:`engine.operate.progress_view`'s);
the Spark commands reach it through entry points, not imports.
"""
