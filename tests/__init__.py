"""Tests of suffixlm and crf (a package, so its folders never shadow the packages under test)."""
