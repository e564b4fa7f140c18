"""Loads the C ABI library (python/capi/dfgnn_capi.h) with ctypes and declares its functions,
and binds the PyTorch extension `ops` (dfgnn._ops, python/ext/ops.cpp) to it.

The library is looked up in $DFGNN_LIB, else next to this file (where `pip install` puts it).
Graphs and plans are made through ctypes; the attention calls go through `ops`, which calls
dfgnn_forward and dfgnn_backward itself. `call` runs a function and turns a failure into
ValueError (user errors: a malformed graph, a shape the kernels reject) or RuntimeError (CUDA
errors, allocation failures), with the library's message; `ops` raises the same.
"""

import ctypes
import os

import torch  # loads the libraries dfgnn._ops links to

try:
    from . import _ops as ops
except ImportError as e:  # not built, or built for another Python or PyTorch
    raise ImportError(f"dfgnn: its PyTorch extension dfgnn._ops does not load ({e}); reinstall the package "
                      f"against this Python and PyTorch: `pip install --no-build-isolation .`") from e

__all__ = ["lib", "ops", "call", "has_cuda", "Where", "MODELS", "DTYPES"]

# The element types of a plan's tensors (dfgnn::DType).
DTYPES = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}

_NAME = "libdfgnn_capi.so"


def _load():
    path = os.environ.get("DFGNN_LIB") or os.path.join(os.path.dirname(__file__), _NAME)
    if not os.path.exists(path):
        raise ImportError(
            f"dfgnn: the native library {path} is missing; install the package with "
            f"`pip install --no-build-isolation .` from the dfgnn repository, or point DFGNN_LIB at a built {_NAME}")
    return ctypes.CDLL(path)


lib = _load()

_p, _i, _i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
_ip = ctypes.c_ssize_t  # intptr_t: the CUDA stream

lib.dfgnn_last_error.restype = ctypes.c_char_p
lib.dfgnn_last_error.argtypes = []
lib.dfgnn_has_cuda.restype = _i
lib.dfgnn_has_cuda.argtypes = []
lib.dfgnn_model_name.restype = ctypes.c_char_p
lib.dfgnn_model_name.argtypes = [_i]
lib.dfgnn_set_host_threads.argtypes = [_i]
lib.dfgnn_host_concurrency.restype = _i
lib.dfgnn_host_concurrency.argtypes = []
lib.dfgnn_host_space.restype = ctypes.c_char_p
lib.dfgnn_host_space.argtypes = []
lib.dfgnn_graph_from_coo.argtypes = [_i, _ip, _i64, _i64, _i64, _p, _p, _p, _i64, ctypes.POINTER(_p)]
lib.dfgnn_graph_from_csr.argtypes = [_i64, _i64, _p, _p, ctypes.POINTER(_p)]
lib.dfgnn_graph_free.restype = None
lib.dfgnn_graph_free.argtypes = [_p]
lib.dfgnn_graph_info.argtypes = [_p] + [ctypes.POINTER(_i64)] * 4
lib.dfgnn_graph_csr.argtypes = [_p] * 5
lib.dfgnn_graph_reorder.argtypes = [_p, ctypes.c_char_p, _p, ctypes.POINTER(_p)]
lib.dfgnn_graph_partition.argtypes = [_p, _i, _p]


class Where(ctypes.Structure):
    """dfgnn_where: the host (device -1) or a CUDA device and stream, with the caller's device copy
    of the graph's arrays where the graph was not built on that device."""
    _fields_ = [("device", _i), ("stream", _ip), ("row_ptr", _p), ("src", _p), ("dst", _p), ("edge_id", _p)]


lib.dfgnn_plan_create.argtypes = [_p, ctypes.POINTER(Where), _i, _i, _i, _i, ctypes.POINTER(_p)]
lib.dfgnn_plan_prepare_backward.argtypes = [_p, _ip]
lib.dfgnn_plan_set_dropout_ids.argtypes = [_p, _p]
lib.dfgnn_plan_free.restype = None
lib.dfgnn_plan_free.argtypes = [_p]
lib.dfgnn_plan_strategy.restype = ctypes.c_char_p
lib.dfgnn_plan_strategy.argtypes = [_p]

lib.dfgnn_forward.argtypes = lib.dfgnn_backward.argtypes = [_p, _ip, _p]  # plan, stream, dfgnn_call
ops.bind(*(ctypes.cast(f, _p).value for f in (lib.dfgnn_forward, lib.dfgnn_backward, lib.dfgnn_last_error,
                                              lib.dfgnn_plan_free)))

has_cuda = bool(lib.dfgnn_has_cuda())


def share_cores():
    """Called before each graph is made: the host kernels (an OpenMP Kokkos, started by the
    first graph) run on torch's intra-op threads, so that the two libraries share the cores as
    torch.set_num_threads said by then."""
    lib.dfgnn_set_host_threads(torch.get_num_threads())


def _models():
    code, names = 0, {}
    while (name := lib.dfgnn_model_name(code)) is not None:
        names[name.decode()] = code
        code += 1
    return names


MODELS = _models()  # the models' C ABI codes by name ("gt": 0, ...)


def call(function, *args):
    """Calls a dfgnn_* function that returns a status; raises on failure."""
    status = function(*args)
    if status:
        message = lib.dfgnn_last_error().decode(errors="replace")
        raise (ValueError if status == 1 else RuntimeError)(message)


# Graphs and plans on the GPU take their memory from PyTorch's caching allocator.
lib.dfgnn_set_device_allocator.argtypes = [_p, _p]
if has_cuda:
    call(lib.dfgnn_set_device_allocator, *ops.allocator())
