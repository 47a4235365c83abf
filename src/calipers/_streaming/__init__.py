"""Mergeable streaming states (``init`` / ``update`` / ``merge`` / ``compute``), JAX pytrees whose
``psum`` is the merge: count states for thresholded, probability and language-model metrics, and
the score-histogram and per-query states."""
