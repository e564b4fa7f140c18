"""Loads the C ABI library (python/capi/dfgnn_capi.h) with ctypes and declares its functions.

The library is looked up in $DFGNN_LIB, else next to this file (where `pip install` puts it).
`call` runs a function and turns a failure into ValueError (user errors: a malformed graph, a
shape the kernels reject) or RuntimeError (CUDA errors, allocation failures), with the
library's message.
"""

import ctypes
import os

__all__ = ["lib", "call", "fail", "has_cuda", "GT", "AGNN", "GAT", "GATV2"]

GT, AGNN, GAT, GATV2 = 0, 1, 2, 3  # dfgnn::ScoreKind

_NAME = "libdfgnn_capi.so"


def _load():
    path = os.environ.get("DFGNN_LIB") or os.path.join(os.path.dirname(__file__), _NAME)
    if not os.path.exists(path):
        raise ImportError(
            f"dfgnn: the native library {path} is missing; install the package with "
            f"`pip install .` from the dfgnn repository, or point DFGNN_LIB at a built {_NAME}")
    return ctypes.CDLL(path)


lib = _load()

_p, _i, _i64, _f, _u64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_float, ctypes.c_uint64
_ip = ctypes.c_ssize_t  # intptr_t: the CUDA stream

lib.dfgnn_last_error.restype = ctypes.c_char_p
lib.dfgnn_last_error.argtypes = []
lib.dfgnn_has_cuda.restype = _i
lib.dfgnn_has_cuda.argtypes = []
lib.dfgnn_graph_from_coo.argtypes = [_i64, _i64, _p, _p, ctypes.POINTER(_p)]
lib.dfgnn_graph_from_csr.argtypes = [_i64, _p, _p, ctypes.POINTER(_p)]
lib.dfgnn_graph_free.restype = None
lib.dfgnn_graph_free.argtypes = [_p]
lib.dfgnn_graph_info.argtypes = [_p] + [ctypes.POINTER(_i64)] * 3
lib.dfgnn_graph_csr.argtypes = [_p] * 5
lib.dfgnn_graph_reorder.argtypes = [_p, ctypes.c_char_p, _p, ctypes.POINTER(_p)]
lib.dfgnn_plan_create.argtypes = [_p, _i, _i, _i, ctypes.POINTER(_p)]
lib.dfgnn_plan_create_cuda.argtypes = [_p, _i, _p, _p, _p, _p, _i, _i, _i, ctypes.POINTER(_p)]
lib.dfgnn_plan_free.restype = None
lib.dfgnn_plan_free.argtypes = [_p]
lib.dfgnn_plan_strategy.restype = ctypes.c_char_p
lib.dfgnn_plan_strategy.argtypes = [_p]

# Per model: plan, stream, [scale or slope], its inputs, edge values, edge heads, dropout, seed,
# then the forward's out and logsumexp, or the backward's out, logsumexp, dOut and gradients.
_options = [_p, _i, _f, _u64]
for _name, _scalar, _inputs, _grads in (("gt", [_f], [_p, _p, _p], 3), ("agnn", [], [_p, _p, _i], 2),
                                        ("gat", [_f], [_p, _p, _p], 3), ("gatv2", [_f], [_p, _p, _p], 3)):
    _fwd = getattr(lib, f"dfgnn_{_name}_forward")
    _fwd.argtypes = [_p, _ip] + _scalar + _inputs + _options + [_p, _p]
    _bwd = getattr(lib, f"dfgnn_{_name}_backward")
    _bwd.argtypes = [_p, _ip] + _scalar + _inputs + _options + [_p, _p, _p] + [_p] * _grads

has_cuda = bool(lib.dfgnn_has_cuda())


def fail(status):
    """Raises the error of a dfgnn_* call that returned a nonzero status, with its message.
    The ops' eager path calls the native functions itself (`if status: fail(status)`), one
    Python call less than `call`."""
    message = lib.dfgnn_last_error().decode(errors="replace")
    raise (ValueError if status == 1 else RuntimeError)(message)


def call(function, *args):
    """Calls a dfgnn_* function that returns a status; raises on failure."""
    status = function(*args)
    if status:
        fail(status)
