import os

import pytest
import torch

import dfgnn

# CUDA tests run where a GPU is visible and dfgnn was built with CUDA; elsewhere they skip,
# unless DFGNN_REQUIRE_CUDA=1 (the GPU machine's run), which turns a skip into a failure.
CUDA = torch.cuda.is_available() and dfgnn.has_cuda
if os.environ.get("DFGNN_REQUIRE_CUDA") == "1" and not CUDA:
    raise RuntimeError(f"DFGNN_REQUIRE_CUDA=1 but torch.cuda.is_available() = {torch.cuda.is_available()}, "
                       f"dfgnn.has_cuda = {dfgnn.has_cuda}")
cuda_only = pytest.mark.skipif(not CUDA, reason="needs a CUDA device and dfgnn built with DFGNN_ENABLE_CUDA")
DEVICES = ["cpu", pytest.param("cuda", marks=cuda_only)]


def assert_close(actual, expected, tol, what="", scale=0.0):
    """|actual - expected| <= tol * (|expected| + max |expected|), elementwise: relative to
    the tensor's magnitude, so entries that cancel to ~0 are not held to a relative bound.
    `scale` raises that magnitude for tensors that are ~0 as a whole (a gradient that
    vanishes in exact arithmetic is compared at the scale of its layer's other gradients)."""
    actual = actual.detach().cpu().double()
    expected = expected.detach().cpu().double()
    assert actual.shape == expected.shape, f"{what}: shape {list(actual.shape)} != {list(expected.shape)}"
    scale = max(scale, expected.abs().max().item() if expected.numel() else 0.0)
    err = (actual - expected).abs() - tol * (expected.abs() + scale)
    worst = err.max().item() if err.numel() else -1.0
    assert worst <= 0, (f"{what}: max error {(actual - expected).abs().max().item():.3g} "
                        f"(scale {scale:.3g}, tol {tol})")


def pytest_report_header(config):
    return (f"dfgnn {dfgnn.__version__} from {dfgnn.__file__}, library {dfgnn._lib.lib._name} "
            f"(CUDA kernels: {dfgnn.has_cuda}); torch {torch.__version__}, GPU: {torch.cuda.is_available()}")
