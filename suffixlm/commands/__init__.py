"""Sub-commands of ``suffixlm``: each module defines ``command`` (a click command).

Modules here import heavy things (numba kernels) inside the command body, so that
``suffixlm --help`` stays fast.
"""
