//! polysandbox: run benchmark test suites in rootless, resource-limited, measured sandboxes.
//!
//! - [`sandbox`]: one command in its own namespaces, limits and usage record;
//! - [`cgroups`]: the v1 and v2 backends, a file per controller;
//! - [`seccomp`]: Docker-format profiles compiled to BPF;
//! - [`image`]: layers applied safely to a directory;
//! - [`reference`]: image references, normalised as podman does;
//! - [`cli`]: the command line, a file per subcommand.

pub mod cgroups;
pub mod cli;
pub mod eval;
pub mod image;
pub mod measure;
pub mod reference;
pub mod sandbox;
pub mod seccomp;
pub(crate) mod sys;
pub mod units;
