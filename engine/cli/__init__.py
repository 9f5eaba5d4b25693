"""The ``tfront`` command line (:mod:`~engine.cli.main`) and the progress pictures it draws
(:mod:`~engine.operate.progress_view`). The top layer: it imports the engine, never the other way;
the Spark commands reach it through entry points, not imports.
"""
