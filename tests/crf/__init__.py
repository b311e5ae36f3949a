"""Tests of the crf package."""
