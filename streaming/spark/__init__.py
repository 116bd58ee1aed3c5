"""How routewatch runs Spark: the session every job and test shares (``session``) and the
local file system its checkpoints go through (``local_fs``, with its Java source in ``jvm/``)."""
