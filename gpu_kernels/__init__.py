"""CUDA kernels for the batched engine, each with a CPU twin.

Kernels take arrays in and give arrays out (consolidation, segmented reduction, Pareto minima,
closure gathers); one concern per module, each module's docstring stating its inputs, outputs
and cost. This package imports nothing from ``engine`` or ``spark_plugin``, and imports CuPy
only lazily, inside the functions that need a device, so it loads on machines without a GPU.
Its contents arrive with the CUDA backend.
"""
