"""Tests of the suffixlm package."""
