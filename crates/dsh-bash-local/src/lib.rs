//! Local BashExecutor: bash -c per call in its own process group
