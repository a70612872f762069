//! One module per subcommand. Each exposes an `Args` type (clap) and
//! `run(args) -> u8` returning the process exit code.

pub mod schema;
pub mod session;
