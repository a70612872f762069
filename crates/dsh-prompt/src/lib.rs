//! System-prompt assembly: ordered sections plus tool schemas
