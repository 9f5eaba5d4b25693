"""The GPU cost model of issue 24: counting (on the CUDA simulator), fitting to the H100 run of
commit 840c890, predicting this tree (``gpu_model``)."""
