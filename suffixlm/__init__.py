"""suffixlm: log-linear n-gram language models on suffix trees with structured penalties."""

__version__ = "0.1.0"
