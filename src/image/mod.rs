//! Images: OCI documents (`oci`), safe layer application (`unpack`), the store (`store`), its
//! object directory (`objects`) and layer records (`layers`, `tarsplit`), and importing
//! archives into it (`import`). The registry client builds on these.

pub mod assemble;
pub mod auth;
pub mod import;
pub mod layers;
pub mod objects;
pub mod oci;
pub mod pull;
pub mod registry;
pub mod store;
pub mod tarsplit;
pub mod unpack;
pub mod usage;
