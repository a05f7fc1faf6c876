"""convt_op: fast 2-D transposed convolution for PyTorch.

Importing the package builds (first time only) and loads the operator library,
which registers ``torch.ops.convt.conv_transpose2d`` and
``torch.ops.convt.conv_transpose2d_backward`` with their CPU (and, where built,
CUDA) kernels and autograd (csrc/autograd.cpp); the fake kernels are registered here.
"""

from ._build import build, library_path, load_library

load_library()

from . import _fake  # noqa: E402,F401  (fake kernels; autograd is registered in C++, csrc/autograd.cpp)
from .nn import ConvTranspose2d, convert  # noqa: E402
from .ops import conv_transpose2d  # noqa: E402
from .graph_rewrite import rewrite  # noqa: E402
from .compile import disable, enable  # noqa: E402

__all__ = ["ConvTranspose2d", "build", "conv_transpose2d", "convert", "disable", "enable", "library_path", "rewrite"]
__version__ = "0.1.0"
