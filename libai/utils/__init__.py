"""Utilities: parallel layout, checkpoints, events and writers, logging."""
