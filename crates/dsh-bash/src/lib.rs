//! Bash execution seam: the BashExecutor trait and its vocabulary
