"""The pipeline's stages as Spark transformations: reading and validating lines (``read``) and
the stateful stage that runs the engine's step over the whole stream (``track``)."""
