"""The job's two ways to run and what they need around the pipeline: the command line
(``cli``), ``routewatch evaluate`` over finite traces (``evaluate``), the long-running
``routewatch stream`` (``stream``), its sink into the store (``sink``) and its progress
reports (``progress``)."""
