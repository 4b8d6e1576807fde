"""Verifiable, decentralized training of machine-learning models on an EVM chain."""

__version__ = "0.1.0"
